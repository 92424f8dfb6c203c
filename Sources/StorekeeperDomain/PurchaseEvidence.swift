public import Foundation

/// Verified purchases in the one shape the grant rules read. verifyReceipt answers, StoreKit 2
/// signed transactions, notifications and Server API history each convert into it once, at the
/// edge (`PurchaseEvidence+AppStore.swift`), so the rules never see an Apple wire model.
public struct PurchaseEvidence: Sendable, Hashable {
    /// What was verified, for the record and for the rules that differ by source.
    public enum Source: String, Sendable, Hashable, Codable {
        case receipt
        case signedTransaction = "signed_transaction"
        case notification
        case serverAPI = "server_api"
    }

    /// One transaction, with the fields the rules rely on present and typed.
    public struct Purchase: Sendable, Hashable {
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        public var quantity: Int
        public var purchaseDate: Date
        public var originalPurchaseDate: Date?
        public var expiresDate: Date?
        /// Refund or revocation.
        public var cancellationDate: Date?
        /// `PURCHASED` or `FAMILY_SHARED` (Apple's names, kept as sent).
        public var ownershipType: String?
        /// When Apple stated this copy as current (a Server API transaction's `signedDate`; the
        /// moment verifyReceipt was asked, for `latest_receipt_info`). Nil for copies that may
        /// be old: a device's receipt, a transaction the app posts, a notification's. A current
        /// copy without the refund recorded before it means Apple reversed that refund.
        public var currentAt: Date?
        /// The customer's app transaction id (StoreKit 2 payloads since 2025; receipts have none):
        /// one per Apple account and app, present even before any purchase.
        public var appTransactionId: String?
        /// The `appAccountToken` the app set on the purchase (lower-cased), so support can find
        /// the customer a token names.
        public var appAccountToken: String?
        /// Apple's `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`) and the
        /// share refunded in milliunits of a percent (100000 = all), when `cancellationDate` is set.
        public var revocationType: String?
        public var revocationPercentage: Int?
        /// `BILLED_UPFRONT` or `MONTHLY` (with a 12-month commitment), as Apple sent it.
        public var billingPlanType: String?
        public var commitment: CommitmentTerms?
        /// The offer it was bought with, if any.
        public var offer: PurchaseOffer?
        /// What Apple charged for one item, and the customer's storefront (StoreKit 2 only).
        public var price: ChargedPrice?
        public var storefront: String?

        public init(
            transactionId: String, originalTransactionId: String, productId: String, quantity: Int = 1, purchaseDate: Date,
            originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, cancellationDate: Date? = nil, ownershipType: String? = nil,
            currentAt: Date? = nil
        ) {
            self.currentAt = currentAt
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.quantity = quantity
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = originalPurchaseDate
            self.expiresDate = expiresDate
            self.cancellationDate = cancellationDate
            self.ownershipType = ownershipType
        }
    }

    /// What Apple said about the next renewal of one subscription.
    public struct Renewal: Sendable, Hashable {
        public var autoRenewEnabled: Bool?
        public var autoRenewProductId: String?
        public var inBillingRetry: Bool
        public var gracePeriodExpiresDate: Date?
        public var expirationIntent: String?
        /// When Apple signed it (a signed renewal info's `signedDate`): notifications arrive in
        /// any order, so an older renewal info never replaces a newer one. Nil for
        /// verifyReceipt's pending renewal info, which is Apple's answer of the moment.
        public var signedAt: Date?
        /// Apple's `eligibleWinBackOfferIds`: the win-back offers it would sell the subscriber now.
        public var winBackOfferIds: [String]?
        /// Apple's `priceIncreaseStatus` (verifyReceipt's `price_consent_status`): 0 while a
        /// price increase that needs the customer's consent waits for it, 1 once agreed or for
        /// one that needs none; nil without a price increase.
        public var priceIncreaseStatus: Int? = nil

        public init(
            autoRenewEnabled: Bool?, autoRenewProductId: String?, inBillingRetry: Bool, gracePeriodExpiresDate: Date?,
            expirationIntent: String?, signedAt: Date? = nil, winBackOfferIds: [String]? = nil
        ) {
            self.winBackOfferIds = winBackOfferIds
            self.autoRenewEnabled = autoRenewEnabled
            self.autoRenewProductId = autoRenewProductId
            self.inBillingRetry = inBillingRetry
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
            self.expirationIntent = expirationIntent
            self.signedAt = signedAt
        }
    }

    public var source: Source
    /// The app the evidence was issued for.
    public var bundleId: String?
    /// Storage name of the environment it was verified in (`production`, `sandbox`).
    public var environment: String
    /// One entry per transaction id, by purchase date then id.
    public var purchases: [Purchase]
    /// By original transaction id.
    public var renewals: [String: Renewal]

    public init(source: Source, bundleId: String?, environment: String, purchases: [Purchase], renewals: [String: Renewal] = [:]) {
        self.source = source
        self.bundleId = bundleId
        self.environment = environment
        self.purchases = purchases.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        self.renewals = renewals
    }

    /// Transaction and original transaction ids the evidence names, so storage loads and locks
    /// exactly those rows.
    public var referencedIds: (transactionIds: [String], originalIds: [String]) {
        (purchases.map(\.transactionId), Array(Set(purchases.map(\.originalTransactionId))).sorted())
    }
}
