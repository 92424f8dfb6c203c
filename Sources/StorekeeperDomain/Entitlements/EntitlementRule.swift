public import Foundation

/// Which purchase stands behind each entitlement, decided from the subscriber's own facts at
/// `now` (docs/ENTITLEMENTS.md):
/// 1. Every product of the entitlement the subscriber holds, not refunded or revoked, is a
///    candidate: a non-consumable or free subscription (for life), each auto-renewable
///    subscription (by original transaction; active, in its grace period, or lapsed), each
///    non-renewing product's period.
/// 2. An active candidate beats an inactive one; among active ones a lifetime purchase beats any
///    with an end, then the one ending latest; among inactive ones, the one that ended last.
/// 3. Ties: a purchase rather than a promotional grant, bought rather than family shared, then
///    the later purchase, then the smaller product id, so the answer never depends on storage
///    order.
/// An operator's promotional grant, not revoked, is a candidate too (active from its start to its
/// end, or for life), so a promotion over a purchase changes nothing when it ends.
/// An entitlement none of whose products was ever held (or only refunded) is absent.
public enum EntitlementRule {
    public static func resolve(
        _ definitions: [EntitlementDefinition], view: SubscriberView, transactions: [TransactionRecord],
        promotional: [PromotionalGrant] = [], now: Date
    ) -> [String: Entitlement] {
        let byId = Dictionary(transactions.map { ($0.transactionId, $0) }, uniquingKeysWith: { first, _ in first })
        var candidates: [String: [Entitlement]] = [:]
        func add(_ productId: String, _ make: (String) -> Entitlement) {
            for definition in definitions where definition.products.contains(productId) {
                candidates[definition.id, default: []].append(make(definition.id))
            }
        }
        func ownership(_ record: TransactionRecord?) -> Entitlement.Ownership {
            record?.ownershipType == "FAMILY_SHARED" ? .familyShared : .purchased
        }
        func source(_ record: TransactionRecord?) -> Entitlement.Source {
            record?.imported == true ? .imported : .purchase
        }
        for owned in view.nonConsumables + view.freeSubscriptions {
            add(owned.productId) { id in
                Entitlement(
                    id: id, isActive: true, expiresAt: nil, willRenew: false, periodType: .normal, productId: owned.productId,
                    transactionId: owned.transactionId, originalTransactionId: owned.originalTransactionId,
                    purchaseDate: owned.purchaseDate, environment: owned.environment,
                    ownership: ownership(byId[owned.transactionId]), billingIssue: false, gracePeriodExpiresAt: nil,
                    unsubscribed: false, source: source(byId[owned.transactionId]))
            }
        }
        for subscription in view.subscriptions where subscription.status != .revoked {
            // The period now running (or last run) is the latest transaction's.
            let latest = transactions.filter {
                $0.originalTransactionId == subscription.originalTransactionId && !$0.isRevoked
            }.max { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
            guard let latest else { continue }
            let billingIssue = subscription.status == .inGracePeriod || subscription.status == .inBillingRetry
            add(subscription.productId) { id in
                var entitlement = Entitlement(
                    id: id, isActive: subscription.isActive, expiresAt: subscription.expiresDate,
                    willRenew: subscription.status == .active ? subscription.autoRenewEnabled : false,
                    periodType: periodType(latest.offer), productId: subscription.productId, transactionId: latest.transactionId,
                    originalTransactionId: subscription.originalTransactionId, purchaseDate: latest.purchaseDate,
                    environment: subscription.environment, ownership: ownership(latest), billingIssue: billingIssue,
                    gracePeriodExpiresAt: subscription.status == .inGracePeriod ? subscription.gracePeriodExpiresDate : nil,
                    unsubscribed: subscription.autoRenewEnabled == false, source: source(latest))
                entitlement.pendingProductId = subscription.pendingProductId
                entitlement.priceIncreaseStatus = subscription.priceIncreaseStatus
                return entitlement
            }
        }
        for period in view.nonRenewingSubscriptions {
            guard let lastId = period.transactionIds.last, let last = byId[lastId] else { continue }
            add(period.productId) { id in
                Entitlement(
                    id: id, isActive: period.isActive, expiresAt: period.endDate, willRenew: false, periodType: .normal,
                    productId: period.productId, transactionId: last.transactionId, originalTransactionId: last.originalTransactionId,
                    purchaseDate: last.purchaseDate, environment: last.environment, ownership: ownership(last), billingIssue: false,
                    gracePeriodExpiresAt: nil, unsubscribed: false, source: source(last))
            }
        }
        let defined = Set(definitions.map(\.id))
        for grant in promotional where grant.revokedAt == nil && defined.contains(grant.entitlementId) {
            var entitlement = Entitlement(
                id: grant.entitlementId, isActive: grant.isActive(at: now), expiresAt: grant.expiresAt, willRenew: false,
                periodType: .promotional, productId: nil, transactionId: nil, originalTransactionId: nil, purchaseDate: grant.startsAt,
                environment: nil, ownership: nil, billingIssue: false, gracePeriodExpiresAt: nil, unsubscribed: false, source: .promotional)
            entitlement.grantId = grant.id
            candidates[grant.entitlementId, default: []].append(entitlement)
        }
        return candidates.mapValues { list in list.max(by: { ranksBelow($0, $1) })! }
    }

    /// The period type of the offer a period was bought with (none: normal).
    public static func periodType(_ offer: PurchaseOffer?) -> Entitlement.PeriodType {
        guard let offer else { return .normal }
        if offer.type == PurchaseOffer.introductory {
            return offer.discountType == PurchaseOffer.freeTrial ? .trial : .introductory
        }
        return offer.type > 0 ? .promotional : .normal
    }

    /// `a` loses to `b` (rule 2, then 3).
    static func ranksBelow(_ a: Entitlement, _ b: Entitlement) -> Bool {
        if a.isActive != b.isActive { return !a.isActive }
        // Lifetime (no end) beats any end; otherwise the later end wins.
        let aEnd = a.expiresAt ?? .distantFuture
        let bEnd = b.expiresAt ?? .distantFuture
        if aEnd != bEnd { return aEnd < bEnd }
        // A bought purchase wins a tie over a promotional grant; whether a purchase was learnt live or by
        // import says nothing about which should stand, so it must not decide (nor leave it to storage order).
        if (a.source == .promotional) != (b.source == .promotional) { return a.source == .promotional }
        if a.ownership != b.ownership { return a.ownership == .familyShared }
        if a.purchaseDate != b.purchaseDate { return (a.purchaseDate ?? .distantPast) < (b.purchaseDate ?? .distantPast) }
        if a.productId != b.productId { return (a.productId ?? "") > (b.productId ?? "") }
        return (a.grantId ?? "") > (b.grantId ?? "")
    }
}
