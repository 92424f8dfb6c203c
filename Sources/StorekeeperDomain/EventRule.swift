public import Foundation

/// The events a change causes, derived from what the change writes compared with what was
/// stored before it. Pure: the same plan over the same stored facts gives the same events with
/// the same ids, and a replay that changes nothing gives none (the planner's plan is empty of
/// new transactions, refunds and subscription changes then).
public enum EventRule {
    static let familyShared = "FAMILY_SHARED"

    /// Events of a grant plan, in the order a subscriber's backend should apply them: ownership
    /// moves first, then purchases (by purchase date), refunds, reversals, subscription changes.
    public static func events(_ plan: GrantPlan, context: GrantContext, evidence: PurchaseEvidence) -> [SubscriberEvent] {
        var builder = Builder(context: context, source: evidence.source, environment: evidence.environment)
        for transfer in plan.transfers {
            var details = SubscriberEvent.Details(fromAppUserId: transfer.fromAppUserId)
            details.toAppUserId = transfer.toAppUserId
            builder.add(.transfer, subject: transfer.originalTransactionId, appUserId: transfer.toAppUserId, details: details) {
                $0.originalTransactionId = transfer.originalTransactionId
            }
            builder.add(.transfer, subject: "\(transfer.originalTransactionId)_from", appUserId: transfer.fromAppUserId, details: details) {
                $0.originalTransactionId = transfer.originalTransactionId
            }
        }
        var conflicted = Set<String>()
        for conflict in plan.summary.conflicts where conflicted.insert(conflict.originalTransactionId).inserted {
            let owner = context.bindings[conflict.originalTransactionId]?.appUserId
            // The same user claiming the same bound purchase again is not news: the id names the
            // claim (claimant and owner), not the verification.
            builder.add(
                .ownershipConflict, subject: conflict.originalTransactionId, appUserId: context.appUserId,
                details: .init(ownerAppUserId: owner, verificationId: context.verificationId),
                cause: claimCause(claimant: context.appUserId, owner: owner ?? "")
            ) {
                $0.productId = conflict.productId
                $0.transactionId = conflict.transactionId
                $0.originalTransactionId = conflict.originalTransactionId
            }
        }
        // The product each original transaction was on before the transaction at hand.
        var previousProduct = context.subscriptions.mapValues(\.productId)
        for record in plan.newTransactions {
            let previous = previousProduct[record.originalTransactionId]
            let type = purchaseType(record, previousProductId: previous)
            if record.productType == .autoRenewable { previousProduct[record.originalTransactionId] = record.productId }
            guard let type else { continue }
            var details: SubscriberEvent.Details?
            if type == .productChange { details = .init(previousProductId: previous) }
            if type == .consumablePurchase { details = .init(credits: record.credits) }
            builder.add(type, record, occurredAt: record.purchaseDate, details: details)
            if let cancelled = record.cancellationDate {
                builder.add(record.ownershipType == familyShared ? .revoke : .refund, record, occurredAt: cancelled, details: revocation(record))
            }
        }
        for record in plan.revokedTransactions {
            builder.add(
                record.ownershipType == familyShared ? .revoke : .refund, record, occurredAt: record.cancellationDate ?? context.now,
                details: revocation(record))
        }
        let reinstated = Set(plan.summary.reinstated ?? [])
        for record in plan.reinstatedTransactions where reinstated.contains(record.transactionId) {
            builder.add(.refundReversed, record, occurredAt: record.reinstatedAt ?? context.now)
        }
        for facts in plan.subscriptions {
            for (type, details) in subscriptionChanges(from: context.subscriptions[facts.originalTransactionId], to: facts, now: context.now) {
                builder.add(type, subject: facts.originalTransactionId, appUserId: facts.appUserId, details: details) {
                    $0.productId = facts.productId
                    $0.transactionId = facts.latestTransactionId
                    $0.originalTransactionId = facts.originalTransactionId
                    $0.environment = facts.environment
                }
            }
        }
        return builder.events
    }

    /// A submission of `appUserId` was found invalid.
    public static func invalid(
        appId: String, appUserId: String, verificationId: String, reason: FailureReason?, now: Date
    ) -> SubscriberEvent {
        SubscriberEvent(
            id: SubscriberEvent.id(type: .verificationInvalid, subject: verificationId, cause: verificationId),
            type: .verificationInvalid, appId: appId, environment: nil, appUserId: appUserId, occurredAt: now, recordedAt: now,
            details: .init(reason: reason?.rawValue, verificationId: verificationId))
    }

    /// Provisional access granted while Apple could not be asked (`removed` false), or ended
    /// because Apple answered (`removed` true).
    public static func provisional(_ grants: [ProvisionalGrant], removed: Bool, now: Date) -> [SubscriberEvent] {
        let type: EventType = removed ? .provisionalAccessRemoved : .provisionalAccessGranted
        return grants.map { grant in
            SubscriberEvent(
                id: SubscriberEvent.id(type: type, subject: grant.transactionId, cause: grant.verificationId), type: type,
                appId: grant.appId, environment: nil, appUserId: grant.appUserId, productId: grant.productId,
                transactionId: grant.transactionId, originalTransactionId: grant.originalTransactionId, occurredAt: now,
                recordedAt: now, details: .init(expiresDate: grant.expiresAt, verificationId: grant.verificationId))
        }
    }

    /// The event of a newly granted transaction; nil for products the catalog does not list
    /// (they are recorded, never credited, and their event waits for the catalog to name them).
    static func purchaseType(_ record: TransactionRecord, previousProductId: String?) -> EventType? {
        switch record.productType {
        case .consumable: return .consumablePurchase
        case .nonConsumable, .freeSubscription: return .nonConsumablePurchase
        case .nonRenewing: return .nonRenewingPurchase
        case .autoRenewable:
            guard let previousProductId, record.transactionId != record.originalTransactionId else { return .initialPurchase }
            return previousProductId == record.productId ? .renewal : .productChange
        default: return nil
        }
    }

    /// What changed between the stored facts of a subscription and the facts written now.
    /// Renewals, refunds and product changes are transaction events; these are the rest.
    static func subscriptionChanges(
        from before: SubscriptionFacts?, to after: SubscriptionFacts, now: Date
    ) -> [(EventType, SubscriberEvent.Details?)] {
        var changes: [(EventType, SubscriberEvent.Details?)] = []
        let wasRetrying = before?.inBillingRetry ?? false
        let renewedPast = (after.expiresDate ?? .distantPast) > (before?.expiresDate ?? .distantPast)
        if let before, let was = before.autoRenewEnabled, let enabled = after.autoRenewEnabled, was != enabled {
            changes.append((enabled ? .autoRenewEnabled : .autoRenewDisabled, nil))
        }
        if let status = after.priceIncreaseStatus, status != before?.priceIncreaseStatus, status == 0 || status == 1 {
            changes.append((status == 0 ? .priceIncreasePending : .priceIncreaseAgreed, .init(expiresDate: after.expiresDate)))
        }
        if after.inBillingRetry, !wasRetrying {
            changes.append((.billingIssue, .init(expiresDate: after.expiresDate)))
        }
        if let grace = after.gracePeriodExpiresDate, grace > now, grace != before?.gracePeriodExpiresDate {
            changes.append((.gracePeriod, .init(gracePeriodExpiresDate: grace)))
        }
        if wasRetrying, !after.inBillingRetry, renewedPast {
            changes.append((.billingRecovered, .init(expiresDate: after.expiresDate)))
        }
        let expired = SubscriptionStatus.evaluate(after, at: now) == .expired
        let toldExpired = after.expirationIntent != nil && after.expirationIntent != before?.expirationIntent
        let retryGaveUp = wasRetrying && !after.inBillingRetry && !renewedPast
        // Apple may state the reason before the end (auto-renew turned off carries intent 1 in
        // the renewal info): the expiry is then news when facts stored while the subscription
        // was still running meet facts that say it ended.
        let endedWhileStoredLive = after.expirationIntent != nil && before.map(wasLive) == true
        if expired, toldExpired || retryGaveUp || endedWhileStoredLive {
            changes.append((.expiration, .init(expirationReason: after.expirationIntent, expiresDate: after.expiresDate)))
        }
        return changes
    }

    /// `claim-` and 16 hex digits of a 64-bit FNV-1a hash of the claimant and the owner: app
    /// user ids are any text, and an event id travels in a `webhook-id` header. A collision
    /// would need two claimants of one purchase to share 64 bits.
    public static func claimCause(claimant: String, owner: String) -> String {
        "claim-" + SubscriberEvent.fingerprint(claimant, owner)
    }

    /// Whether stored facts gave access (or awaited Apple's retry) when they were written.
    static func wasLive(_ facts: SubscriptionFacts) -> Bool {
        switch SubscriptionStatus.evaluate(facts, at: facts.updatedAt) {
        case .active, .inGracePeriod, .inBillingRetry: true
        case .expired, .revoked: false
        }
    }

    /// Collects events with ids derived from the change, dropping a second event with the same id.
    struct Builder {
        let context: GrantContext
        let source: PurchaseEvidence.Source
        let environment: String
        var events: [SubscriberEvent] = []
        var ids = Set<String>()

        mutating func add(
            _ type: EventType, subject: String, appUserId: String, occurredAt: Date? = nil, details: SubscriberEvent.Details?,
            cause: String? = nil, _ fill: (inout SubscriberEvent) -> Void
        ) {
            let id = SubscriberEvent.id(type: type, subject: subject, cause: cause ?? context.verificationId)
            guard ids.insert(id).inserted else { return }
            var event = SubscriberEvent(
                id: id, type: type, appId: context.appId, environment: environment, appUserId: appUserId,
                occurredAt: occurredAt ?? context.evidenceSignedAt ?? context.now, recordedAt: context.now, source: source,
                details: details)
            fill(&event)
            events.append(event)
        }

        mutating func add(_ type: EventType, _ record: TransactionRecord, occurredAt: Date, details: SubscriberEvent.Details? = nil) {
            let product = context.catalog[record.productId]
            add(type, subject: record.transactionId, appUserId: record.appUserId, occurredAt: occurredAt, details: details) {
                $0.productId = record.productId
                $0.transactionId = record.transactionId
                $0.originalTransactionId = record.originalTransactionId
                $0.environment = record.environment
                $0.priceMicros = product?.priceMicros
                $0.currency = product?.currency
            }
        }
    }
}

/// Apple's kind of refund and the share refunded, when Apple said (a prorated refund is partial).
private func revocation(_ record: TransactionRecord) -> SubscriberEvent.Details? {
    guard record.revocationType != nil || record.revocationPercentage != nil else { return nil }
    var details = SubscriberEvent.Details()
    details.revocationType = record.revocationType
    details.revocationPercentage = record.revocationPercentage
    return details
}
