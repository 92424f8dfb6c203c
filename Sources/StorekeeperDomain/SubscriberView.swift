public import Foundation

/// What one app user owns at an instant, and the history behind it. Built from stored
/// transactions and subscription facts by a pure function, so "now" is an input.
public struct SubscriberView: Codable, Hashable, Sendable {
    public struct OwnedProduct: Codable, Hashable, Sendable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDate: Date
        public var environment: String
    }

    public struct Subscription: Codable, Hashable, Sendable {
        public var productId: String
        public var originalTransactionId: String
        public var status: SubscriptionStatus
        public var isActive: Bool
        public var expiresDate: Date?
        public var autoRenewEnabled: Bool?
        public var gracePeriodExpiresDate: Date?
        public var environment: String
        /// From the latest transaction: `MONTHLY` for a monthly plan with a 12-month commitment,
        /// with where it stands in the commitment (`commitment.expiresDate`: when the customer
        /// may next leave; `expiresDate` above is the next monthly renewal).
        public var billingPlanType: String? = nil
        public var commitment: CommitmentTerms? = nil
        /// The plan the next renewal moves to, when the customer chose another of the group (a
        /// downgrade or crossgrade waits for the renewal): Apple's `autoRenewProductId` where it
        /// is not this subscription's product, while auto-renew is on.
        public var pendingProductId: String? = nil
        /// A higher price Apple announced for the next renewals: `pending` while it waits for the
        /// customer's consent (without it the subscription lapses at `expiresDate`), `agreed` once
        /// given or where none is needed; nil without one. Apple's `priceIncreaseStatus`.
        public var priceIncreaseStatus: PriceIncreaseStatus? = nil
    }

    /// Apple's `priceIncreaseStatus` by name.
    public enum PriceIncreaseStatus: String, Codable, Hashable, Sendable {
        case pending
        case agreed

        public init?(apple status: Int?) {
            switch status {
            case 0: self = .pending
            case 1: self = .agreed
            default: return nil
            }
        }
    }

    public struct NonRenewing: Codable, Hashable, Sendable {
        public var productId: String
        public var startDate: Date
        public var endDate: Date
        public var isActive: Bool
        public var transactionIds: [String]
    }

    public struct ConsumablePurchase: Codable, Hashable, Sendable {
        public var productId: String
        public var transactionId: String
        public var quantity: Int
        public var credits: Int
        public var purchaseDate: Date
        public var revoked: Bool
        public var environment: String
    }

    public var appUserId: String
    public var asOf: Date
    /// Product ids that give access right now.
    public var activeEntitlements: [String]
    public var nonConsumables: [OwnedProduct]
    public var subscriptions: [Subscription]
    public var nonRenewingSubscriptions: [NonRenewing]
    public var freeSubscriptions: [OwnedProduct]
    public var consumables: [ConsumablePurchase]
    /// Credits of the consumables not refunded, less those spent (``CreditSpend``); negative
    /// when a refund took back credits already spent.
    public var creditBalance: Int
    /// Credits spent so far; nil before the first spend.
    public var creditsSpent: Int? = nil
    public var history: [TransactionRecord]
    /// Access given provisionally while Apple could not be asked (the outage policy): flagged
    /// apart from `activeEntitlements`, each with its end; gone once Apple answers. Never credits.
    public var provisionalEntitlements: [ProvisionalGrant] = []
    /// The app's named entitlements (`pro`) this subscriber holds or held, each with the purchase
    /// behind it (``EntitlementRule``); `activeEntitlements` above stays the product-level view.
    public var entitlements: [String: Entitlement] = [:]
    /// What the app's backend said about the customer (e-mail, name, custom keys); absent when
    /// nothing was said. Set by whoever reads the stored attributes, not by `build`.
    public var attributes: SubscriberAttributes? = nil
    /// Set while access is withheld (``AccessSuspension``): no entitlement is then active.
    public var accessSuspended: AccessSuspension? = nil
    /// The anonymous ids linked to this user (docs/IDENTITY.md); every route accepts any of them.
    public var aliases: [String]? = nil
    /// The customer's app transaction as the app last posted it (``CustomerAppTransaction``):
    /// the app version they first obtained. Absent until the app posts one.
    public var appTransaction: CustomerAppTransaction? = nil

    /// Takes what the user spent from the balance their purchases built.
    public mutating func deductSpent(_ spent: Int) {
        guard spent != 0 else { return }
        creditsSpent = spent
        creditBalance = consumables.reduce(0) { $0 + $1.credits } - spent
    }

    public static func build(
        appUserId: String, transactions: [TransactionRecord], subscriptions: [SubscriptionFacts],
        catalog: [String: Product], now: Date, provisional: [ProvisionalGrant] = [], entitlements: [EntitlementDefinition] = [],
        promotional: [PromotionalGrant] = []
    ) -> SubscriberView {
        let live = transactions.filter { !$0.isRevoked }
        var active = Set<String>()

        func owned(_ type: ProductType) -> [OwnedProduct] {
            var firstByProduct: [String: TransactionRecord] = [:]
            for tx in live where tx.productType == type {
                if let known = firstByProduct[tx.productId], known.purchaseDate <= tx.purchaseDate { continue }
                firstByProduct[tx.productId] = tx
            }
            return firstByProduct.values.sorted { $0.productId < $1.productId }.map {
                OwnedProduct(
                    productId: $0.productId, transactionId: $0.transactionId,
                    originalTransactionId: $0.originalTransactionId, purchaseDate: $0.purchaseDate,
                    environment: $0.environment)
            }
        }
        let nonConsumables = owned(.nonConsumable)
        let free = owned(.freeSubscription)
        active.formUnion(nonConsumables.map(\.productId))
        active.formUnion(free.map(\.productId))

        let byTransactionId = Dictionary(transactions.map { ($0.transactionId, $0) }, uniquingKeysWith: { first, _ in first })
        let subs = subscriptions.filter { $0.appUserId.isSameIdentifier(as: appUserId) }.map { facts in
            let status = SubscriptionStatus.evaluate(facts, at: now)
            var subscription = Subscription(
                productId: facts.productId, originalTransactionId: facts.originalTransactionId, status: status,
                isActive: status.grantsAccess, expiresDate: facts.expiresDate, autoRenewEnabled: facts.autoRenewEnabled,
                gracePeriodExpiresDate: facts.gracePeriodExpiresDate, environment: facts.environment)
            let latest = byTransactionId[facts.latestTransactionId]
            subscription.billingPlanType = latest?.billingPlanType
            subscription.commitment = latest?.commitment
            if facts.autoRenewEnabled != false, let next = facts.autoRenewProductId, next != facts.productId {
                subscription.pendingProductId = next
            }
            subscription.priceIncreaseStatus = PriceIncreaseStatus(apple: facts.priceIncreaseStatus)
            return subscription
        }.sorted { ($0.productId, $0.originalTransactionId) < ($1.productId, $1.originalTransactionId) }
        active.formUnion(subs.filter(\.isActive).map(\.productId))

        // Consecutive purchases stack: each period starts when the previous one ends.
        var nonRenewing: [NonRenewing] = []
        let byProduct = Dictionary(grouping: live.filter { $0.productType == .nonRenewing }, by: \.productId)
        for (productId, purchases) in byProduct.sorted(by: { $0.key < $1.key }) {
            let ordered = purchases.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
            let duration = catalog[productId]?.duration.flatMap(ISODuration.init)
            var start: Date?
            var end = Date.distantPast
            for purchase in ordered {
                let periodStart = max(purchase.purchaseDate, end)
                if start == nil || purchase.purchaseDate > end { start = periodStart }
                end = duration?.added(to: periodStart) ?? periodStart
            }
            let isActive = (start ?? .distantFuture) <= now && now < end
            if isActive { active.insert(productId) }
            nonRenewing.append(
                NonRenewing(
                    productId: productId, startDate: start ?? end, endDate: end, isActive: isActive,
                    transactionIds: ordered.map(\.transactionId)))
        }

        let consumables = transactions.filter { $0.productType == .consumable }
            .sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
            .map {
                ConsumablePurchase(
                    productId: $0.productId, transactionId: $0.transactionId, quantity: $0.quantity,
                    credits: $0.isRevoked ? 0 : $0.credits, purchaseDate: $0.purchaseDate, revoked: $0.isRevoked,
                    environment: $0.environment)
            }

        // Provisional access only where nothing confirmed covers it already.
        let granted = Set(transactions.map(\.transactionId))
        let provisionalNow = provisional.filter {
            $0.appUserId.isSameIdentifier(as: appUserId) && $0.expiresAt > now && !granted.contains($0.transactionId)
                && !active.contains($0.productId)
        }
        var view = SubscriberView(
            appUserId: appUserId, asOf: now, activeEntitlements: active.sorted(), nonConsumables: nonConsumables,
            subscriptions: subs, nonRenewingSubscriptions: nonRenewing, freeSubscriptions: free,
            consumables: consumables, creditBalance: consumables.reduce(0) { $0 + $1.credits },
            history: transactions.sorted { ($0.purchaseDate, $0.transactionId) > ($1.purchaseDate, $1.transactionId) })
        view.provisionalEntitlements = provisionalNow
        view.entitlements = EntitlementRule.resolve(
            entitlements, view: view, transactions: transactions,
            promotional: promotional.filter { $0.appUserId.isSameIdentifier(as: appUserId) }, now: now)
        return view
    }
}
