import Foundation
public import StorekeeperWire

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

/// What the store applies to a purchase, as the server signed it for this user.
public enum StoreOffer: Sendable, Hashable {
    /// A promotional offer's signatures: the store sells at the offer's price.
    case promotional(SignedPromotionalOffer)
    /// The server's introductory-offer eligibility JWS (docs/OFFERS.md): the store applies the
    /// product's introductory offer only where it allows it, in place of its own records.
    case introductoryEligibility(jws: String)
    /// One of the product's win-back offers, by the id Apple's renewal info names: nothing is
    /// signed, the store itself decides whether this customer may take it (a lapsed subscriber).
    case winBack(offerId: String)
}

/// How a subscription sold with a 12-month commitment is billed (StoreKit's
/// `Product.SubscriptionInfo.BillingPlanType`, iOS 26.4 and macOS 26.4): by the month, committing
/// to twelve payments, or the year at once. Apple's names, as the server reports them.
public enum BillingPlan: String, Sendable, Hashable, Codable {
    case monthly = "MONTHLY"
    case upfront = "BILLED_UPFRONT"
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
    /// Buys `productId` with `appAccountToken` set, with the offer the server signed for this
    /// user when one is given, on `billingPlan` where the product offers a choice.
    func purchase(productId: String, appAccountToken: UUID, offer: StoreOffer?, billingPlan: BillingPlan?) async throws -> StorePurchaseResult
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
    /// The device's app transaction as Apple signed it (StoreKit's `AppTransaction.shared`,
    /// its `jwsRepresentation`): how this customer obtained the app. Nil where the store has none.
    func appTransaction() async throws -> String?
    /// Shows the App Store's sheet where the user manages their subscriptions (StoreKit's
    /// `AppStore.showManageSubscriptions(in:)`); returns when it is closed.
    func showManageSubscriptions() async throws
    /// Shows the App Store's refund request sheet for `transactionId` (StoreKit's
    /// `Transaction.beginRefundRequest(for:in:)`). Apple decides; its answer reaches the server
    /// as a notification (CONSUMPTION_REQUEST, then REFUND or REFUND_DECLINED).
    func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome
    /// Shows the App Store's sheet where the user redeems an offer code (StoreKit's
    /// `AppStore.presentOfferCodeRedeemSheet(in:)`); returns when it is shown or closed, with
    /// nothing to report. The purchase a code makes arrives through `updates()`, without an app
    /// account token: the sheet cannot pass one.
    func presentOfferCodeRedeemSheet() async throws
    /// The App Store's sheets waiting for this customer (StoreKit's `Message.messages`). Reading
    /// it takes them from StoreKit, which otherwise shows them at launch: the app then shows each
    /// with `StoreMessage.display()` when it suits. The stream ends when the caller stops iterating.
    func messages() -> AsyncStream<StoreMessage>
}

/// A sheet the App Store has for this customer (StoreKit's `Message`): a higher price to agree
/// to, a payment to fix. Held, it waits; `display()` shows it.
public struct StoreMessage: Sendable {
    public enum Reason: Sendable, Hashable {
        /// A higher subscription price that needs the customer's consent; without it the
        /// subscription lapses at its renewal date (the entitlement's `priceIncreaseStatus`).
        case priceIncreaseConsent
        /// A renewal could not be charged (the entitlement's `billingIssue`).
        case billingIssue
        /// A win-back offer for a lapsed subscriber.
        case winBackOffer
        /// Anything else the App Store has to say.
        case generic
    }

    public let reason: Reason
    let show: @Sendable () async throws -> Void

    public init(reason: Reason, display: @escaping @Sendable () async throws -> Void) {
        self.reason = reason
        self.show = display
    }

    /// Shows the sheet now (StoreKit's `display(in:)`). What the customer decides there reaches
    /// the server from Apple (PRICE_INCREASE, DID_RENEW …); call `entitlements()` afterwards.
    public func display() async throws { try await show() }
}

/// What the refund request sheet came to.
public enum RefundRequestOutcome: Sendable, Hashable {
    /// The request reached Apple.
    case requested
    /// The user closed the sheet.
    case cancelled
}

/// The server's decision on a product's introductory offer for this user (the wire type).
public typealias IntroductoryEligibility = StorekeeperWire.IntroductoryEligibility

/// A win-back offer Apple names for this lapsed user (the wire type).
public typealias WinBackOffer = StorekeeperWire.WinBackOffer
