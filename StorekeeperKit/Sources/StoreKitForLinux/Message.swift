import UIKit

/// As Apple documents it (developer.apple.com/documentation/storekit/message): a sheet the App
/// Store has for the customer, which StoreKit shows at launch unless the app listens to
/// `messages` and shows it itself with `display(in:)`. iOS 16+, Mac Catalyst 16+, visionOS 1+;
/// not on macOS. Sendable here as StoreKit's other values are.
@available(iOS 16.0, visionOS 1.0, *)
@available(macOS, unavailable)
@available(tvOS, unavailable)
@available(watchOS, unavailable)
public struct Message: Sendable {
    /// (…/message/reason-swift.property)
    public let reason: Message.Reason
    /// Not StoreKit's: the subscription the message is about, for the stand-in's store.
    public let standInSubject: String

    /// Not StoreKit's: a message as the stand-in's store hands it over.
    public init(standInReason reason: Message.Reason, subject: String) {
        self.reason = reason
        self.standInSubject = subject
    }

    /// The messages the App Store creates (…/message/messages-swift.type.property). The
    /// stand-in's sequence lists those pending when it is read, as StoreKit does at launch, and
    /// then ends where StoreKit's waits for the next.
    public static var messages: Message.Messages { Messages() }

    /// Shows the message's sheet in `scene` (…/message/display(in:)).
    @MainActor
    public func display(in scene: UIWindowScene) throws {
        try Product.store().display(self)
    }

    /// (…/message/reason-swift.struct): raw values are the stand-in's, Apple documents none.
    public struct Reason: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// (…/message/reason-swift.struct/generic)
        public static let generic = Reason(rawValue: 0)
        /// A price increase that needs the customer's consent (…/priceincreaseconsent).
        public static let priceIncreaseConsent = Reason(rawValue: 1)
        /// (…/message/reason-swift.struct/billingissue)
        @available(iOS 16.4, visionOS 1.0, *)
        public static let billingIssue = Reason(rawValue: 2)
        /// (…/message/reason-swift.struct/winbackoffer)
        @available(iOS 18.0, visionOS 2.0, *)
        public static let winBackOffer = Reason(rawValue: 3)
    }

    /// (…/message/messages-swift.struct): an asynchronous sequence of messages.
    public struct Messages: AsyncSequence, Sendable {
        public typealias Element = Message

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }

        public struct AsyncIterator: AsyncIteratorProtocol {
            var pending: [Message]?

            public mutating func next() async -> Message? {
                if pending == nil { pending = (try? await Product.store().messages()) ?? [] }
                guard pending?.isEmpty == false else { return nil }
                return pending?.removeFirst()
            }
        }
    }
}
