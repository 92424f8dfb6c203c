import Foundation

extension Subscriber {
    /// One transaction granted to the user, as recorded.
    public struct Transaction: Codable, Hashable, Sendable {
        /// What Apple charged for one item, from the signed transaction (absent for receipts).
        public struct Price: Codable, Hashable, Sendable {
            /// Thousandths of the currency's unit (12990 is 12.99).
            public var milliunits: Int64
            public var currency: String

            public init(milliunits: Int64, currency: String) {
                self.milliunits = milliunits
                self.currency = currency
            }
        }

        /// The offer the transaction was bought with, as Apple signed it.
        public struct Offer: Codable, Hashable, Sendable {
            /// Apple's `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
            public var type: Int
            public var identifier: String?
            /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, …
            public var discountType: String?
            /// ISO 8601 duration of the offer.
            public var period: String?

            public init(type: Int, identifier: String? = nil, discountType: String? = nil, period: String? = nil) {
                self.type = type
                self.identifier = identifier
                self.discountType = discountType
                self.period = period
            }
        }

        public var appId: String
        public var appUserId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        /// A catalog product type, or `unknown` for a product the catalog did not list when granted.
        public var productType: String
        public var environment: String
        public var purchaseDate: Date
        public var originalPurchaseDate: Date?
        public var expiresDate: Date?
        /// Set when refunded or revoked.
        public var cancellationDate: Date?
        public var quantity: Int
        public var credits: Int
        /// `PURCHASED` or `FAMILY_SHARED`.
        public var ownershipType: String?
        public var verificationId: String
        /// When a refund of it was reversed.
        public var reinstatedAt: Date?
        /// The customer's app transaction id, when a StoreKit 2 payload named it.
        public var appTransactionId: String?
        public var appAccountToken: String?
        /// While refunded: `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE`.
        public var revocationType: String?
        /// While refunded: the share refunded in milliunits of a percent (100000 = all).
        public var revocationPercentage: Int?
        public var billingPlanType: String?
        public var commitment: CommitmentTerms?
        public var offer: Offer?
        /// Granted by an import of existing customers.
        public var imported: Bool?
        public var price: Price?
        public var storefront: String?

        public init(
            appId: String, appUserId: String, transactionId: String, originalTransactionId: String, productId: String, productType: String,
            environment: String, purchaseDate: Date, originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, cancellationDate: Date? = nil,
            quantity: Int, credits: Int, ownershipType: String? = nil, verificationId: String
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
    }
}
