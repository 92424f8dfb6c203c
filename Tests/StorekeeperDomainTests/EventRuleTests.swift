import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// The events a change causes, decided from the plan and the facts stored before it.
@Suite("event rule")
struct EventRuleTests {
    let t0 = referenceTime
    let month: TimeInterval = 30 * 86_400
    let catalog: [String: Product] = [
        "gold": Product(productId: "gold", type: .autoRenewable, priceMicros: 4_990_000, currency: "USD"),
        "platinum": Product(productId: "platinum", type: .autoRenewable),
        "coins": Product(productId: "coins", type: .consumable, creditAmount: 10),
        "unlock": Product(productId: "unlock", type: .nonConsumable),
        "pass": Product(productId: "pass", type: .nonRenewing, duration: "P1M"),
    ]

    func context(
        _ user: String = "alice", verification: String = "v1", subscriptions: [String: SubscriptionFacts] = [:],
        bindings: [String: OwnershipBinding] = [:], existing: [String: TransactionRecord] = [:], policy: BindingPolicy = .refuse,
        now: Date? = nil
    ) -> GrantContext {
        GrantContext(
            appId: "app", bundleId: "b", appUserId: user, verificationId: verification, now: now ?? t0, catalog: catalog,
            bindingPolicy: policy, existingTransactions: existing, bindings: bindings, subscriptions: subscriptions)
    }

    func purchase(
        _ id: String, original: String? = nil, product: String = "gold", at: Date? = nil, expires: Date? = nil, cancelled: Date? = nil,
        ownership: String = "PURCHASED"
    ) -> PurchaseEvidence.Purchase {
        PurchaseEvidence.Purchase(
            transactionId: id, originalTransactionId: original ?? id, productId: product, purchaseDate: at ?? t0, expiresDate: expires,
            cancellationDate: cancelled, ownershipType: ownership)
    }

    func evidence(_ purchases: [PurchaseEvidence.Purchase], renewals: [String: PurchaseEvidence.Renewal] = [:]) -> PurchaseEvidence {
        PurchaseEvidence(source: .notification, bundleId: "b", environment: "sandbox", purchases: purchases, renewals: renewals)
    }

    func renewal(autoRenew: Bool = true, retrying: Bool = false, grace: Date? = nil, intent: String? = nil) -> PurchaseEvidence.Renewal {
        PurchaseEvidence.Renewal(
            autoRenewEnabled: autoRenew, autoRenewProductId: nil, inBillingRetry: retrying, gracePeriodExpiresDate: grace,
            expirationIntent: intent)
    }

    /// Plans the evidence, then derives its events.
    func events(_ evidence: PurchaseEvidence, _ context: GrantContext) throws -> [SubscriberEvent] {
        guard case .grant(let plan) = GrantPlanner.plan(evidence, context: context) else {
            Issue.record("expected a grant")
            return []
        }
        return EventRule.events(plan, context: context, evidence: evidence)
    }

    /// The stored state after `evidence` was granted to `context`, to plan the next answer over.
    func stored(
        after evidence: PurchaseEvidence, _ context: GrantContext
    ) -> (subscriptions: [String: SubscriptionFacts], existing: [String: TransactionRecord], bindings: [String: OwnershipBinding]) {
        guard case .grant(let plan) = GrantPlanner.plan(evidence, context: context) else { return ([:], [:], [:]) }
        var subscriptions = context.subscriptions
        for facts in plan.subscriptions { subscriptions[facts.originalTransactionId] = facts }
        var existing = context.existingTransactions
        for record in plan.newTransactions + plan.revokedTransactions + plan.reinstatedTransactions {
            existing[record.transactionId] = record
        }
        var bindings = context.bindings
        for binding in plan.bindings { bindings[binding.originalTransactionId] = binding }
        return (subscriptions, existing, bindings)
    }

    @Test("purchases: each product type has its event; a subscription's first period, renewals and product changes differ")
    func purchases() throws {
        let first = evidence([
            purchase("1", expires: t0 + month), purchase("c", product: "coins"), purchase("u", product: "unlock"),
            purchase("p", product: "pass"),
        ])
        let initial = try events(first, context())
        #expect(Set(initial.map(\.type)) == [.initialPurchase, .consumablePurchase, .nonConsumablePurchase, .nonRenewingPurchase])
        let gold = try #require(initial.first { $0.type == .initialPurchase })
        #expect(gold.priceMicros == 4_990_000 && gold.currency == "USD" && gold.appUserId == "alice" && gold.source == .notification)
        #expect(gold.id == SubscriberEvent.id(type: .initialPurchase, subject: "1", cause: "v1"))
        #expect(initial.first { $0.type == .consumablePurchase }?.details?.credits == 10)

        let state = stored(after: first, context())
        let later = context(verification: "v2", subscriptions: state.subscriptions, bindings: state.bindings, existing: state.existing)
        let renewed = try events(
            evidence([
                purchase("1", expires: t0 + month), purchase("2", original: "1", at: t0 + month, expires: t0 + 2 * month),
                purchase("3", original: "1", product: "platinum", at: t0 + 2 * month, expires: t0 + 3 * month),
            ]), later)
        #expect(renewed.map(\.type) == [.renewal, .productChange])
        #expect(renewed.last?.details?.previousProductId == "gold" && renewed.last?.occurredAt == t0 + 2 * month)
        // Back within one answer: the change names the product of the period just before it.
        let back = try events(
            evidence([
                purchase("2", original: "1", product: "platinum", at: t0 + month, expires: t0 + 2 * month),
                purchase("3", original: "1", at: t0 + 2 * month, expires: t0 + 3 * month),
            ]), later)
        #expect(back.map(\.type) == [.productChange, .productChange])
        #expect(back.map { $0.details?.previousProductId } == ["gold", "platinum"])
    }

    @Test("a replay that changes nothing causes no event")
    func replay() throws {
        let answer = evidence([purchase("1", expires: t0 + month)], renewals: ["1": renewal()])
        let state = stored(after: answer, context())
        let again = context(verification: "v2", subscriptions: state.subscriptions, bindings: state.bindings, existing: state.existing)
        #expect(try events(answer, again).isEmpty)
    }

    @Test("refunds, Family Sharing revocations and reversals")
    func refunds() throws {
        let answer = evidence([purchase("1", product: "unlock"), purchase("f", product: "unlock", ownership: "FAMILY_SHARED")])
        let state = stored(after: answer, context())
        let later = context(verification: "v2", subscriptions: state.subscriptions, bindings: state.bindings, existing: state.existing)
        let cancelled = t0 + 3_600
        let refund = evidence([
            purchase("1", product: "unlock", cancelled: cancelled),
            purchase("f", product: "unlock", cancelled: cancelled, ownership: "FAMILY_SHARED"),
        ])
        let revoked = try events(refund, later)
        #expect(revoked.map(\.type) == [.refund, .revoke] && revoked.allSatisfy { $0.occurredAt == cancelled })

        let refunded = stored(after: refund, later)
        var reversal = context(
            verification: "v3", subscriptions: refunded.subscriptions, bindings: refunded.bindings, existing: refunded.existing,
            now: t0 + 7_200)
        reversal.reversesRefunds = true
        reversal.evidenceSignedAt = t0 + 7_200
        #expect(try events(evidence([purchase("1", product: "unlock")]), reversal).map(\.type) == [.refundReversed])
    }

    @Test("a bound purchase: another user's submission is a conflict for them; under transfer, both users are told")
    func ownership() throws {
        let answer = evidence([purchase("1", product: "unlock")])
        let state = stored(after: answer, context())
        let conflict = try events(answer, context("bob", verification: "v2", bindings: state.bindings, existing: state.existing))
        #expect(conflict.map(\.type) == [.ownershipConflict])
        #expect(conflict.first?.appUserId == "bob" && conflict.first?.details?.ownerAppUserId == "alice")
        let again = try events(answer, context("bob", verification: "v3", bindings: state.bindings, existing: state.existing))
        #expect(again.map(\.id) == conflict.map(\.id), "the same claim again has the same id, so it is recorded once")
        let carol = try events(answer, context("carol", verification: "v4", bindings: state.bindings, existing: state.existing))
        #expect(carol.count == 1 && carol.first?.id != conflict.first?.id, "another claimant's conflict is its own")
        #expect(EventRule.claimCause(claimant: "mallory", owner: "alice") == "claim-aade1a999d8b6cfd", "as docs/EVENTS.md shows")

        let moved = try events(
            answer, context("bob", verification: "v2", bindings: state.bindings, existing: state.existing, policy: .transfer))
        #expect(moved.map(\.type) == [.transfer, .transfer] && Set(moved.map(\.appUserId)) == ["alice", "bob"])
        #expect(moved.allSatisfy { $0.details?.fromAppUserId == "alice" && $0.details?.toAppUserId == "bob" })
    }

    @Test("a price increase: pending once, agreed once, replays silent; the view and the entitlement name it; over when renewed past it")
    func priceIncrease() throws {
        var state = stored(after: evidence([purchase("1", expires: t0 + month)], renewals: ["1": renewal()]), context())
        var step = 1
        func next(_ status: Int?, purchases: [PurchaseEvidence.Purchase] = [purchase("1", expires: t0 + month)]) throws -> [EventType] {
            step += 1
            var info = renewal()
            info.priceIncreaseStatus = status
            let context = context(
                verification: "v\(step)", subscriptions: state.subscriptions, bindings: state.bindings, existing: state.existing,
                now: t0 + Double(step) * 3_600)
            let answer = evidence(purchases, renewals: ["1": info])
            let found = try events(answer, context).map(\.type)
            state = stored(after: answer, context)
            return found
        }
        #expect(try next(0) == [.priceIncreasePending])
        #expect(try next(0) == [], "the same renewal info again is not news")
        let view = SubscriberView.build(
            appUserId: "alice", transactions: Array(state.existing.values), subscriptions: Array(state.subscriptions.values),
            catalog: catalog, now: t0 + 86_400)
        #expect(view.subscriptions.map(\.priceIncreaseStatus) == [.pending])
        #expect(try next(1) == [.priceIncreaseAgreed])
        #expect(try next(1) == [])
        #expect(try next(7) == [], "a status Apple may add later is kept, not named")
        #expect(state.subscriptions["1"]?.priceIncreaseStatus == 7)
        let renewed = [purchase("1", expires: t0 + month), purchase("2", original: "1", at: t0 + month, expires: t0 + 2 * month)]
        #expect(try next(nil, purchases: renewed) == [.renewal])
        #expect(state.subscriptions["1"]?.priceIncreaseStatus == nil)
    }

    @Test("subscription changes: auto-renew off and on, billing issue, grace period, recovery, expiration")
    func subscriptionLife() throws {
        var state = stored(after: evidence([purchase("1", expires: t0 + month)], renewals: ["1": renewal()]), context())
        var step = 1
        func next(_ answer: PurchaseEvidence, at now: Date) throws -> [EventType] {
            step += 1
            let context = context(
                verification: "v\(step)", subscriptions: state.subscriptions, bindings: state.bindings, existing: state.existing, now: now)
            let found = try events(answer, context).map(\.type)
            state = stored(after: answer, context)
            return found
        }
        let period1 = purchase("1", expires: t0 + month)
        #expect(try next(evidence([period1], renewals: ["1": renewal(autoRenew: false)]), at: t0 + 86_400) == [.autoRenewDisabled])
        #expect(try next(evidence([period1], renewals: ["1": renewal()]), at: t0 + 2 * 86_400) == [.autoRenewEnabled])
        let late = t0 + month + 3_600
        #expect(
            try next(evidence([period1], renewals: ["1": renewal(retrying: true, grace: late + 86_400)]), at: late)
                == [.billingIssue, .gracePeriod])
        let period2 = purchase("2", original: "1", at: late + 3_600, expires: t0 + 2 * month)
        #expect(try next(evidence([period1, period2], renewals: ["1": renewal()]), at: late + 3_600) == [.renewal, .billingRecovered])
        let over = t0 + 2 * month + 60
        #expect(
            try next(evidence([period1, period2], renewals: ["1": renewal(autoRenew: false, intent: "1")]), at: over)
                == [.autoRenewDisabled, .expiration])
        #expect(state.subscriptions["1"]?.expirationIntent == "1")
    }

    @Test(
        "an expiry announced early (intent with auto-renew off) is an expiration when the period ends; a refund and its reversal after it are not a second one"
    )
    func expiryAnnouncedEarly() throws {
        var state = stored(after: evidence([purchase("1", expires: t0 + month)], renewals: ["1": renewal()]), context())
        var step = 1
        func next(_ answer: PurchaseEvidence, at now: Date, reversing: Bool = false) throws -> [EventType] {
            step += 1
            var context = context(
                verification: "v\(step)", subscriptions: state.subscriptions, bindings: state.bindings, existing: state.existing, now: now)
            context.reversesRefunds = reversing
            context.evidenceSignedAt = now
            let found = try events(answer, context).map(\.type)
            state = stored(after: answer, context)
            return found
        }
        let off = renewal(autoRenew: false, intent: "1")
        #expect(try next(evidence([purchase("1", expires: t0 + month)], renewals: ["1": off]), at: t0 + 60) == [.autoRenewDisabled])
        #expect(try next(evidence([purchase("1", expires: t0 + month)], renewals: ["1": off]), at: t0 + month + 1) == [.expiration])
        #expect(try next(evidence([purchase("1", expires: t0 + month)], renewals: ["1": off]), at: t0 + month + 2).isEmpty, "told once")
        let refunded = purchase("1", expires: t0 + month, cancelled: t0 + month + 3)
        #expect(try next(evidence([refunded], renewals: ["1": off]), at: t0 + month + 3) == [.refund])
        #expect(
            try next(evidence([purchase("1", expires: t0 + month)], renewals: ["1": off]), at: t0 + month + 4, reversing: true)
                == [.refundReversed])
    }

    @Test("an invalid verification and provisional access are told to the submitter, with stable ids")
    func invalidAndProvisional() {
        let invalid = EventRule.invalid(appId: "app", appUserId: "alice", verificationId: "v1", reason: .receiptSignatureInvalid, now: t0)
        #expect(invalid.type == .verificationInvalid && invalid.details?.reason == "receipt_signature_invalid")
        #expect(invalid.id == EventRule.invalid(appId: "app", appUserId: "alice", verificationId: "v1", reason: nil, now: t0 + 1).id)
        let grant = ProvisionalGrant(
            appId: "app", appUserId: "alice", verificationId: "v1", transactionId: "1", originalTransactionId: "1", productId: "gold",
            expiresAt: t0 + 86_400)
        let granted = EventRule.provisional([grant], removed: false, now: t0)
        let removed = EventRule.provisional([grant], removed: true, now: t0 + 60)
        #expect(granted.map(\.type) == [.provisionalAccessGranted] && removed.map(\.type) == [.provisionalAccessRemoved])
        #expect(granted.first?.details?.expiresDate == t0 + 86_400 && granted.first?.id != removed.first?.id)
    }
}
