import Foundation

extension Subscriber {
    /// One of the app's named entitlements (`pro`) and the purchase or grant behind it.
    public struct Entitlement: Codable, Hashable, Sendable {
        /// From the offer of the current period.
        public struct PeriodType: RawStringValue {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }

            public static let normal = PeriodType(rawValue: "normal")
            /// An introductory free trial.
            public static let trial = PeriodType(rawValue: "trial")
            /// A paid introductory offer.
            public static let introductory = PeriodType(rawValue: "introductory")
            /// A promotional offer, offer code or win-back.
            public static let promotional = PeriodType(rawValue: "promotional")
        }

        public struct Ownership: RawStringValue {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }

            public static let purchased = Ownership(rawValue: "purchased")
            public static let familyShared = Ownership(rawValue: "family_shared")
        }

        public struct Source: RawStringValue {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }

            public static let purchase = Source(rawValue: "purchase")
            /// Granted by an operator; no money moved.
            public static let promotional = Source(rawValue: "promotional")
            /// The purchase behind it was brought in by an import of existing customers.
            public static let imported = Source(rawValue: "import")
        }

        public var id: String
        public var isActive: Bool
        /// When access ends; absent for a lifetime purchase.
        public var expiresAt: Date?
        /// Auto-renew on and no billing issue; absent while Apple has not said.
        public var willRenew: Bool?
        public var periodType: PeriodType
        public var productId: String?
        public var transactionId: String?
        public var originalTransactionId: String?
        public var purchaseDate: Date?
        public var environment: String?
        public var ownership: Ownership?
        /// A renewal failed and Apple is retrying (in a grace period, still active).
        public var billingIssue: Bool
        public var gracePeriodExpiresAt: Date?
        /// Auto-renew turned off: access ends at `expiresAt`.
        public var unsubscribed: Bool
        public var source: Source
        /// `promotional`: the operator's grant behind it.
        public var grantId: String?
        /// While `billingIssue` / `unsubscribed` hold: when the server first saw them.
        public var billingIssueDetectedAt: Date?
        public var unsubscribeDetectedAt: Date?
        /// The plan the subscription behind it moves to at its next renewal.
        public var pendingProductId: String?
        public var priceIncreaseStatus: PriceIncreaseStatus?

        public init(
            id: String, isActive: Bool, expiresAt: Date? = nil, willRenew: Bool? = nil, periodType: PeriodType = .normal, productId: String? = nil,
            billingIssue: Bool = false, unsubscribed: Bool = false, source: Source = .purchase
        ) {
            self.id = id
            self.isActive = isActive
            self.expiresAt = expiresAt
            self.willRenew = willRenew
            self.periodType = periodType
            self.productId = productId
            self.billingIssue = billingIssue
            self.unsubscribed = unsubscribed
            self.source = source
        }
    }
}
