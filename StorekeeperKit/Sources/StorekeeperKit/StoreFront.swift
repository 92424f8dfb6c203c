import Foundation

/// A transaction as the store hands it to the app: its id and Apple's signed form.
public struct StoreTransaction: Codable, Sendable, Hashable {
    public var id: String
    public var productId: String
    /// The JWS (StoreKit 2's `jwsRepresentation`).
    public var signedTransaction: String

    public init(id: String, productId: String, signedTransaction: String) {
        self.id = id
        self.productId = productId
        self.signedTransaction = signedTransaction
    }
}

/// A promotional offer as the server signed it for this user (docs/OFFERS.md): the V2 compact
/// JWS StoreKit takes, and the V1 fields for an SDK that predates it.
public struct SignedPromotionalOffer: Codable, Sendable, Hashable {
    public var offerId: String
    public var jws: String
    public var keyIdentifier: String
    public var nonce: UUID
    /// UNIX milliseconds.
    public var timestamp: Int64
    /// Base64 of the DER signature.
    public var signature: String

    public init(offerId: String, jws: String, keyIdentifier: String, nonce: UUID, timestamp: Int64, signature: String) {
        self.offerId = offerId
        self.jws = jws
        self.keyIdentifier = keyIdentifier
        self.nonce = nonce
        self.timestamp = timestamp
        self.signature = signature
    }
}

/// What a purchase at the store came to.
public enum StorePurchaseResult: Sendable, Hashable {
    case purchased(StoreTransaction)
    /// Waiting for approval (Ask to Buy) or a payment step; it arrives later as an update.
    case pending
    case cancelled
}

/// The App Store as StorekeeperKit uses it: small, so the StoreKit 2 adapter stays thin and a
/// test (or Linux) can buy through the App Store simulator instead.
public protocol StoreFront: Sendable {
    /// Buys `productId` with `appAccountToken` set, at a promotional offer's price when one is
    /// given (signed by the server for this user).
    func purchase(productId: String, appAccountToken: UUID, offer: SignedPromotionalOffer?) async throws -> StorePurchaseResult
    /// Transactions paid for and not finished yet (StoreKit's `Transaction.unfinished`).
    func unfinished() async throws -> [StoreTransaction]
    /// Tells the store the purchase was delivered (StoreKit's `finish()`).
    func finish(_ transaction: StoreTransaction) async throws
    /// Transactions the store hands over while the app runs, outside a purchase call: bought
    /// on another device, approved after Ask to Buy, renewed (StoreKit's `Transaction.updates`).
    /// The stream ends when the caller stops iterating.
    func updates() -> AsyncStream<StoreTransaction>
    /// Everything the user owns at the store now, after bringing the device up to date with
    /// the store: only on the user's request, because it may ask them to sign in (StoreKit's
    /// `AppStore.sync()`, then `Transaction.currentEntitlements`).
    func restorable() async throws -> [StoreTransaction]
    /// The products among `ids` the store sells to this user, localized (StoreKit's
    /// `Product.products(for:)`); ids it does not know are left out.
    func products(for ids: [String]) async throws -> [StoreProduct]
}
