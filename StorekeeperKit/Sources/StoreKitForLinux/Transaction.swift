import UIKit

/// As Apple documents it (developer.apple.com/documentation/storekit/transaction): a purchase
/// the App Store signed, with the members the adapter uses.
@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
public struct Transaction: Sendable, Hashable {
    /// (…/transaction/id)
    public let id: UInt64
    /// (…/transaction/productid)
    public let productID: String
    let signedForm: String

    /// Not StoreKit's: a transaction as the stand-in's store hands it over, with its JWS.
    public init(standInID id: UInt64, productID: String, jws: String) {
        self.id = id
        self.productID = productID
        self.signedForm = jws
    }

    /// The App Store's refund request sheet for the transaction `transactionID`, in `scene`
    /// (…/transaction/beginrefundrequest(for:in:)): iOS 15+, Mac Catalyst 15+, visionOS 1+.
    @available(iOS 15.0, visionOS 1.0, *)
    @available(macOS, unavailable)
    @available(tvOS, unavailable)
    @available(watchOS, unavailable)
    @MainActor
    public static func beginRefundRequest(for transactionID: UInt64, in scene: UIWindowScene) async throws -> Transaction.RefundRequestStatus {
        try await Product.store().beginRefundRequest(for: transactionID)
    }

    /// As Apple documents it (…/transaction/refundrequeststatus).
    public enum RefundRequestStatus: Sendable {
        case success
        case userCancelled
    }

    /// Tells the store the purchase was delivered (…/transaction/finish()).
    public func finish() async { await StandIn.store?.finish(self) }

    /// (…/transaction/unfinished)
    public static var unfinished: Transaction.Transactions {
        Transactions(listing: { await StandIn.store?.unfinished() ?? [] })
    }

    /// (…/transaction/updates)
    public static var updates: Transaction.Transactions {
        Transactions(StandIn.store?.updates() ?? AsyncStream { $0.finish() })
    }

    /// (…/transaction/currententitlements)
    public static var currentEntitlements: Transaction.Transactions {
        Transactions(listing: { await StandIn.store?.currentEntitlements() ?? [] })
    }

    /// As Apple documents it (…/transaction/transactions): an asynchronous sequence of
    /// transactions that never throws.
    public struct Transactions: AsyncSequence, Sendable {
        public typealias Element = VerificationResult<Transaction>
        public typealias Failure = Never
        let stream: @Sendable () -> AsyncStream<Element>

        /// An AsyncStream has one consumer: the stand-in's store makes one per read of `updates`.
        init(_ stream: AsyncStream<Element>) { self.stream = { stream } }

        init(listing: @escaping @Sendable () async -> [Element]) {
            stream = {
                AsyncStream { continuation in
                    let listing = Task {
                        for element in await listing() { continuation.yield(element) }
                        continuation.finish()
                    }
                    continuation.onTermination = { _ in listing.cancel() }
                }
            }
        }

        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream().makeAsyncIterator()) }

        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<Element>.Iterator
            public mutating func next() async -> Element? { await base.next() }
        }
    }
}

extension Transaction: SignedByTheStore {}
