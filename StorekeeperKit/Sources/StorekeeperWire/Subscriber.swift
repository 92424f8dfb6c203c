import Foundation

/// What one app user owns at an instant, and the history behind it (`GET /v1/subscribers/{id}`,
/// and every event's `entitlements`). The server builds it from its records; the SDK reads the
/// user's entitlements from it, and a backend reads the same shape from events.
public struct Subscriber: WireMessage {
    public static let location = WireLocation.schema("Subscriber")

    public var appUserId: String
    public var asOf: Date
    /// Product ids that give access right now (confirmed by Apple).
    public var activeEntitlements: [String]
    public var nonConsumables: [OwnedProduct]
    public var subscriptions: [Subscription]
    public var nonRenewingSubscriptions: [NonRenewing]
    public var freeSubscriptions: [OwnedProduct]
    public var consumables: [ConsumablePurchase]
    /// Credits of the consumables not refunded, less those spent; below zero when a refund took
    /// back credits already spent.
    public var creditBalance: Int
    /// Absent before the first spend.
    public var creditsSpent: Int?
    /// Every transaction granted to the user, newest first.
    public var history: [Transaction]
    /// Access given while Apple could not be asked, apart from `activeEntitlements`.
    public var provisionalEntitlements: [ProvisionalGrant]
    /// The app's named entitlements (`pro`) held now or before, by id.
    public var entitlements: [String: Entitlement]
    public var attributes: SubscriberAttributes?
    public var accessSuspended: AccessSuspension?
    /// The anonymous ids linked to this user; every route accepts any of them.
    public var aliases: [String]?
    public var appTransaction: AppTransactionInfo?

    public init(
        appUserId: String, asOf: Date, activeEntitlements: [String] = [], nonConsumables: [OwnedProduct] = [],
        subscriptions: [Subscription] = [], nonRenewingSubscriptions: [NonRenewing] = [], freeSubscriptions: [OwnedProduct] = [],
        consumables: [ConsumablePurchase] = [], creditBalance: Int = 0, creditsSpent: Int? = nil, history: [Transaction] = [],
        provisionalEntitlements: [ProvisionalGrant] = [], entitlements: [String: Entitlement] = [:], attributes: SubscriberAttributes? = nil,
        accessSuspended: AccessSuspension? = nil, aliases: [String]? = nil, appTransaction: AppTransactionInfo? = nil
    ) {
        self.appUserId = appUserId
        self.asOf = asOf
        self.activeEntitlements = activeEntitlements
        self.nonConsumables = nonConsumables
        self.subscriptions = subscriptions
        self.nonRenewingSubscriptions = nonRenewingSubscriptions
        self.freeSubscriptions = freeSubscriptions
        self.consumables = consumables
        self.creditBalance = creditBalance
        self.creditsSpent = creditsSpent
        self.history = history
        self.provisionalEntitlements = provisionalEntitlements
        self.entitlements = entitlements
        self.attributes = attributes
        self.accessSuspended = accessSuspended
        self.aliases = aliases
        self.appTransaction = appTransaction
    }

    /// Named entitlements and provisional access decode as empty when a server older than them
    /// leaves them out; everything else the document requires is required.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appUserId = try container.decode(String.self, forKey: .appUserId)
        asOf = try container.decode(Date.self, forKey: .asOf)
        activeEntitlements = try container.decode([String].self, forKey: .activeEntitlements)
        nonConsumables = try container.decode([OwnedProduct].self, forKey: .nonConsumables)
        subscriptions = try container.decode([Subscription].self, forKey: .subscriptions)
        nonRenewingSubscriptions = try container.decode([NonRenewing].self, forKey: .nonRenewingSubscriptions)
        freeSubscriptions = try container.decode([OwnedProduct].self, forKey: .freeSubscriptions)
        consumables = try container.decode([ConsumablePurchase].self, forKey: .consumables)
        creditBalance = try container.decode(Int.self, forKey: .creditBalance)
        creditsSpent = try container.decodeIfPresent(Int.self, forKey: .creditsSpent)
        history = try container.decode([Transaction].self, forKey: .history)
        provisionalEntitlements = try container.decodeIfPresent([ProvisionalGrant].self, forKey: .provisionalEntitlements) ?? []
        entitlements = try container.decodeIfPresent([String: Entitlement].self, forKey: .entitlements) ?? [:]
        attributes = try container.decodeIfPresent(SubscriberAttributes.self, forKey: .attributes)
        accessSuspended = try container.decodeIfPresent(AccessSuspension.self, forKey: .accessSuspended)
        aliases = try container.decodeIfPresent([String].self, forKey: .aliases)
        appTransaction = try container.decodeIfPresent(AppTransactionInfo.self, forKey: .appTransaction)
    }

    /// A non-consumable or free subscription the user owns: the first purchase of it.
    public struct OwnedProduct: Codable, Hashable, Sendable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDate: Date
        public var environment: String

        public init(productId: String, transactionId: String, originalTransactionId: String, purchaseDate: Date, environment: String) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.environment = environment
        }
    }

    /// One auto-renewable subscription (an original transaction) and where it stands.
    public struct Subscription: Codable, Hashable, Sendable {
        public struct Status: RawStringValue {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }

            public static let active = Status(rawValue: "active")
            public static let inGracePeriod = Status(rawValue: "in_grace_period")
            public static let inBillingRetry = Status(rawValue: "in_billing_retry")
            public static let expired = Status(rawValue: "expired")
            public static let revoked = Status(rawValue: "revoked")
        }

        public var productId: String
        public var originalTransactionId: String
        public var status: Status
        /// `active` or `in_grace_period`.
        public var isActive: Bool
        public var expiresDate: Date?
        public var autoRenewEnabled: Bool?
        public var gracePeriodExpiresDate: Date?
        public var environment: String
        /// `MONTHLY` for a monthly plan with a 12-month commitment, `BILLED_UPFRONT`, or what Apple sends next.
        public var billingPlanType: String?
        public var commitment: CommitmentTerms?
        /// The plan the next renewal moves to, when the customer chose another of the group.
        public var pendingProductId: String?
        public var priceIncreaseStatus: PriceIncreaseStatus?

        public init(
            productId: String, originalTransactionId: String, status: Status, isActive: Bool, expiresDate: Date? = nil,
            autoRenewEnabled: Bool? = nil, gracePeriodExpiresDate: Date? = nil, environment: String, billingPlanType: String? = nil,
            commitment: CommitmentTerms? = nil, pendingProductId: String? = nil, priceIncreaseStatus: PriceIncreaseStatus? = nil
        ) {
            self.productId = productId
            self.originalTransactionId = originalTransactionId
            self.status = status
            self.isActive = isActive
            self.expiresDate = expiresDate
            self.autoRenewEnabled = autoRenewEnabled
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
            self.environment = environment
            self.billingPlanType = billingPlanType
            self.commitment = commitment
            self.pendingProductId = pendingProductId
            self.priceIncreaseStatus = priceIncreaseStatus
        }
    }

    /// A higher price Apple announced for the next renewals: `pending` while it waits for the
    /// customer's consent (without it access lapses at the period's end), `agreed` once given or
    /// where none is needed.
    public struct PriceIncreaseStatus: RawStringValue {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let pending = PriceIncreaseStatus(rawValue: "pending")
        public static let agreed = PriceIncreaseStatus(rawValue: "agreed")
    }

    /// Where a monthly plan with a 12-month commitment stands: `expiresDate` is when the
    /// commitment ends (the customer's next chance to leave).
    public struct CommitmentTerms: Codable, Hashable, Sendable {
        public var billingPeriodNumber: Int?
        public var totalBillingPeriods: Int?
        public var expiresDate: Date?

        public init(billingPeriodNumber: Int?, totalBillingPeriods: Int?, expiresDate: Date?) {
            self.billingPeriodNumber = billingPeriodNumber
            self.totalBillingPeriods = totalBillingPeriods
            self.expiresDate = expiresDate
        }
    }

    /// Consecutive purchases of one non-renewing product: each period starts when the previous ends.
    public struct NonRenewing: Codable, Hashable, Sendable {
        public var productId: String
        public var startDate: Date
        public var endDate: Date
        public var isActive: Bool
        public var transactionIds: [String]

        public init(productId: String, startDate: Date, endDate: Date, isActive: Bool, transactionIds: [String]) {
            self.productId = productId
            self.startDate = startDate
            self.endDate = endDate
            self.isActive = isActive
            self.transactionIds = transactionIds
        }
    }

    public struct ConsumablePurchase: Codable, Hashable, Sendable {
        public var productId: String
        public var transactionId: String
        public var quantity: Int
        /// 0 once revoked.
        public var credits: Int
        public var purchaseDate: Date
        public var revoked: Bool
        public var environment: String

        public init(
            productId: String, transactionId: String, quantity: Int, credits: Int, purchaseDate: Date, revoked: Bool, environment: String
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.quantity = quantity
            self.credits = credits
            self.purchaseDate = purchaseDate
            self.revoked = revoked
            self.environment = environment
        }
    }

    /// Access given provisionally while Apple could not be asked, until `expiresAt`.
    public struct ProvisionalGrant: Codable, Hashable, Sendable {
        public var appId: String
        public var appUserId: String
        public var verificationId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var productId: String
        public var expiresAt: Date

        public init(
            appId: String, appUserId: String, verificationId: String, transactionId: String, originalTransactionId: String, productId: String,
            expiresAt: Date
        ) {
            self.appId = appId
            self.appUserId = appUserId
            self.verificationId = verificationId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.productId = productId
            self.expiresAt = expiresAt
        }
    }

    /// What the app's backend or the user's app said about the customer.
    public struct SubscriberAttributes: Codable, Hashable, Sendable {
        public var email: String?
        public var displayName: String?
        public var custom: [String: String]

        public init(email: String? = nil, displayName: String? = nil, custom: [String: String] = [:]) {
            self.email = email
            self.displayName = displayName
            self.custom = custom
        }
    }

    /// Access withheld whatever the subscriber bought: no entitlement is active while it stands.
    public struct AccessSuspension: Codable, Hashable, Sendable {
        /// `consent_rescinded`, or an operator's words.
        public var reason: String
        public var since: Date
        /// An operator, or `apple:RESCIND_CONSENT`.
        public var actor: String

        public init(reason: String, since: Date, actor: String) {
            self.reason = reason
            self.since = since
            self.actor = actor
        }
    }
}
