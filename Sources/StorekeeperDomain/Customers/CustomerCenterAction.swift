public import Foundation

/// What the user did in the app's customer center, as the app reports it: Apple tells the server
/// nothing of a manage-subscriptions sheet, and of a refund request only once the customer sent
/// it (CONSUMPTION_REQUEST). Unsigned, so it is an event for the backend's analytics and
/// support, never a fact access depends on; the transaction it names must be the user's.
public struct CustomerCenterAction: Hashable, Sendable {
    public enum Kind: String, Hashable, Sendable, CaseIterable {
        case manageSubscriptionsShown = "manage_subscriptions_shown"
        case refundRequested = "refund_requested"
    }

    /// What the refund request sheet came to.
    public enum Outcome: String, Hashable, Sendable, CaseIterable {
        case requested
        case cancelled
    }

    /// The app's key for this action: the same action reported twice is one event.
    public var id: String
    public var kind: Kind
    /// `refund_requested`: the transaction the request is about.
    public var transactionId: String?
    public var outcome: Outcome?

    public init(id: String, kind: Kind, transactionId: String? = nil, outcome: Outcome? = nil) {
        self.id = id
        self.kind = kind
        self.transactionId = transactionId
        self.outcome = outcome
    }

    /// What is wrong with the action as sent; empty when nothing is.
    public var problems: [String] {
        var problems: [String] = []
        if !(1...64).contains(id.utf8.count) || !id.utf8.allSatisfy(Self.keyByte) {
            problems.append("id: 1-64 letters, digits, '-' or '_'")
        }
        switch kind {
        case .manageSubscriptionsShown:
            if transactionId != nil || outcome != nil { problems.append("manage_subscriptions_shown takes no transactionId or outcome") }
        case .refundRequested:
            if transactionId?.isAppleTransactionId != true { problems.append("transactionId: an App Store transaction id (1-19 digits)") }
            if outcome == nil { problems.append("outcome: requested or cancelled") }
        }
        return problems
    }

    /// The event of this action for `transaction` (the user's, when the action names one): its id
    /// is built from the user and the app's key, so a report sent again records nothing new.
    public func event(appId: String, appUserId: String, transaction: TransactionRecord?, now: Date) -> SubscriberEvent {
        let type: EventType = kind == .refundRequested ? .refundRequestedInApp : .manageSubscriptionsShownInApp
        var event = SubscriberEvent(
            id: SubscriberEvent.id(
                type: type, subject: transaction?.transactionId ?? "app", cause: "app-" + SubscriberEvent.fingerprint(appUserId, id)),
            type: type, appId: appId, environment: transaction?.environment, appUserId: appUserId, productId: transaction?.productId,
            transactionId: transaction?.transactionId, originalTransactionId: transaction?.originalTransactionId, occurredAt: now,
            recordedAt: now, details: outcome.map { .init(reason: $0.rawValue) })
        event.source = nil
        return event
    }

    static func keyByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5a).contains(byte) || (0x61...0x7a).contains(byte) || byte == 0x2d || byte == 0x5f
    }
}

extension String {
    /// 1-19 ASCII digits: Apple's transaction ids are 64-bit numbers written in decimal.
    var isAppleTransactionId: Bool { (1...19).contains(utf8.count) && utf8.allSatisfy { (0x30...0x39).contains($0) } }
}
