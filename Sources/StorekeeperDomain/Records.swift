public import Foundation

/// One App Store transaction as granted to an app user. Unique by (appId, transactionId):
/// that uniqueness is what makes every grant happen at most once.
public struct TransactionRecord: Codable, Hashable, Sendable {
    public var appId: String
    public var appUserId: String
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var productType: ProductType
    public var environment: String
    public var purchaseDate: Date
    public var originalPurchaseDate: Date?
    public var expiresDate: Date?
    public var cancellationDate: Date?
    public var quantity: Int
    /// Credits this transaction added (consumables); 0 otherwise.
    public var credits: Int
    public var ownershipType: String?
    public var verificationId: String
    /// When a refund of this transaction was reversed (REFUND_REVERSED): a refund signed before
    /// this instant, delivered late, does not revoke it again.
    public var reinstatedAt: Date? = nil
    /// The customer's app transaction id, when a StoreKit 2 payload named it; a transaction
    /// first seen in a receipt gets it when a signed copy arrives.
    public var appTransactionId: String? = nil
    /// The `appAccountToken` Apple's signed copy carries (lower-cased): support finds a
    /// customer by it. Learned like `appTransactionId`.
    public var appAccountToken: String? = nil
    /// Apple's kind of refund or revocation and the share refunded (milliunits of a percent),
    /// while `cancellationDate` is set; a prorated refund is a partial refund in the ledger.
    public var revocationType: String? = nil
    public var revocationPercentage: Int? = nil
    /// `BILLED_UPFRONT` or `MONTHLY`, and for a monthly plan with a commitment, where it stands.
    public var billingPlanType: String? = nil
    public var commitment: CommitmentTerms? = nil
    /// The offer the transaction was bought with (introductory, promotional, offer code, win-back).
    public var offer: PurchaseOffer? = nil
    /// Granted by an import of existing customers (docs/IMPORT.md), not a purchase the app or
    /// Apple's notifications brought while the customer was ours.
    public var imported = false
    /// What Apple charged for one item, and in which storefront (absent for receipts).
    public var price: ChargedPrice? = nil
    public var storefront: String? = nil

    public init(
        appId: String, appUserId: String, transactionId: String, originalTransactionId: String,
        productId: String, productType: ProductType, environment: String, purchaseDate: Date,
        originalPurchaseDate: Date?, expiresDate: Date?, cancellationDate: Date?, quantity: Int,
        credits: Int, ownershipType: String?, verificationId: String
    ) {
        self.appId = appId
        self.appUserId = appUserId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.productType = productType
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.cancellationDate = cancellationDate
        self.quantity = quantity
        self.credits = credits
        self.ownershipType = ownershipType
        self.verificationId = verificationId
    }

    public var isRevoked: Bool { cancellationDate != nil }
}

/// An original transaction id bound to the app user who first submitted it.
public struct OwnershipBinding: Codable, Hashable, Sendable {
    public var appId: String
    public var originalTransactionId: String
    public var appUserId: String
    public var productId: String

    public init(appId: String, originalTransactionId: String, appUserId: String, productId: String) {
        self.appId = appId
        self.originalTransactionId = originalTransactionId
        self.appUserId = appUserId
        self.productId = productId
    }
}

/// What Apple last said about one auto-renewable subscription. State is derived from these
/// facts at read time (see `SubscriptionStatus.evaluate`), because it changes with the clock.
public struct SubscriptionFacts: Codable, Hashable, Sendable {
    public var appId: String
    public var originalTransactionId: String
    public var appUserId: String
    public var productId: String
    public var environment: String
    public var latestTransactionId: String
    public var expiresDate: Date?
    public var revokedAt: Date?
    public var autoRenewEnabled: Bool?
    public var autoRenewProductId: String?
    public var inBillingRetry: Bool
    public var gracePeriodExpiresDate: Date?
    public var expirationIntent: String?
    public var updatedAt: Date
    /// When Apple signed the renewal info the renewal fields come from; nil when unknown (a
    /// receipt's, or none).
    public var renewalSignedAt: Date? = nil
    /// The win-back offers Apple's latest renewal info names for this subscriber (nil: none).
    public var winBackOfferIds: [String]? = nil
    /// Apple's `priceIncreaseStatus` from the same renewal info (``PurchaseEvidence/Renewal``).
    public var priceIncreaseStatus: Int? = nil

    public init(
        appId: String, originalTransactionId: String, appUserId: String, productId: String, environment: String,
        latestTransactionId: String, expiresDate: Date?, revokedAt: Date?, autoRenewEnabled: Bool?,
        autoRenewProductId: String?, inBillingRetry: Bool, gracePeriodExpiresDate: Date?, expirationIntent: String?,
        updatedAt: Date
    ) {
        self.appId = appId
        self.originalTransactionId = originalTransactionId
        self.appUserId = appUserId
        self.productId = productId
        self.environment = environment
        self.latestTransactionId = latestTransactionId
        self.expiresDate = expiresDate
        self.revokedAt = revokedAt
        self.autoRenewEnabled = autoRenewEnabled
        self.autoRenewProductId = autoRenewProductId
        self.inBillingRetry = inBillingRetry
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.expirationIntent = expirationIntent
        self.updatedAt = updatedAt
    }
}

/// One line of the finance ledger. Unique by (appId, transactionId, event).
public struct LedgerEntry: Codable, Hashable, Sendable {
    public enum Event: String, Codable, Sendable {
        case purchase
        case refund
        /// Apple reversed a refund: the money is the developer's again.
        case refundReversed = "refund_reversed"
    }

    public var appId: String
    public var appUserId: String
    public var productId: String
    public var productType: ProductType
    public var transactionId: String
    public var originalTransactionId: String
    public var environment: String
    public var purchaseDate: Date
    public var event: Event
    public var quantity: Int
    public var priceMicros: Int64?
    public var currency: String?
    /// Transaction state at the time of the entry: `granted`, `refunded`, `conflict`.
    public var state: String
    public var recordedAt: Date
    /// Booked by an import of existing customers: the money moved before Storekeeper knew the
    /// customer (finance reconciles it against Apple's earlier reports).
    public var imported = false
    /// The amount is the catalog's list price: Apple's data said nothing of what was charged
    /// (a receipt), so a sale in another storefront or at an offer's price may differ.
    public var estimated = false
    /// The customer's storefront (ISO 3166-1 alpha-3), when Apple said.
    public var storefront: String? = nil
    /// The offer the purchase was bought with.
    public var offer: PurchaseOffer? = nil
    /// Apple's commission taken, in basis points (3000 = 30%), and what the amount leaves after
    /// it: an estimate under the app's `commission` programme (docs/REVENUE.md).
    public var commissionRate: Int? = nil
    public var proceedsMicros: Int64? = nil

    public init(
        appId: String, appUserId: String, productId: String, productType: ProductType, transactionId: String,
        originalTransactionId: String, environment: String, purchaseDate: Date, event: Event, quantity: Int,
        priceMicros: Int64?, currency: String?, state: String, recordedAt: Date
    ) {
        self.appId = appId
        self.appUserId = appUserId
        self.productId = productId
        self.productType = productType
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.purchaseDate = purchaseDate
        self.event = event
        self.quantity = quantity
        self.priceMicros = priceMicros
        self.currency = currency
        self.state = state
        self.recordedAt = recordedAt
    }
}
