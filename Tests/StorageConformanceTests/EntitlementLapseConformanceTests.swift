import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    @Test(
        "time that passes is an event: a promotional grant's end and a subscription Apple stays silent about are told once, by any number of sweeps",
        arguments: StoreFactory.all)
    func lapsesAreRecordedOnce(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 5_990_000, currency: "USD"),
            now: t0)
        try await store.seedEntitlements(appId: "app", definitions: [EntitlementDefinition(id: "pro", products: ["monthly"])], now: t0)
        let granted = try await ManagePromotionalGrants(store: store).grant(
            .init(
                appId: "app", appUserId: "bob", entitlementId: "pro", duration: "P7D", actor: AuditActor(name: "support", reason: ""),
                reason: "outage", grantId: nil), now: t0)
        guard case .granted(let grant, created: true) = granted else {
            Issue.record("not granted: \(granted)")
            return
        }
        /// A monthly subscription Apple tells once, at `now`, and then says nothing more about.
        func subscribe(_ user: String, _ id: String, expires: Date, graceUntil: Date? = nil, now: Date) async throws {
            var purchase = PurchaseEvidence.Purchase(transactionId: id, originalTransactionId: id, productId: "monthly", purchaseDate: t0)
            purchase.expiresDate = expires
            let submitted = try await SubmitEvidence(store: store)(submission(user: user, receipt: "lapse-\(id)"), now: now)
            let leased = try #require(try await lease(store, at: now).first { $0.jobId == submitted.verification.jobId })
            _ = try await VerificationOutcomes(store: store).completeVerified(
                leased, verificationId: submitted.verification.id,
                evidence: PurchaseEvidence(
                    source: .notification, bundleId: "com.example", environment: "sandbox", purchases: [purchase],
                    renewals: [
                        id: .init(
                            autoRenewEnabled: true, autoRenewProductId: "monthly", inBillingRetry: graceUntil != nil,
                            gracePeriodExpiresDate: graceUntil, expirationIntent: nil, signedAt: now)
                    ]),
                report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: now)
        }
        // Alice's renews in a month; Carol's renewal failed a day in, and her grace runs 2 days more.
        let renewsAt = t0.addingTimeInterval(30 * 86_400)
        try await subscribe("alice", "l1", expires: renewsAt, now: t0)
        let graceEnd = t0.addingTimeInterval(3 * 86_400)
        try await subscribe("carol", "l2", expires: t0.addingTimeInterval(86_400), graceUntil: graceEnd, now: t0.addingTimeInterval(90_000))

        let sweep = RecordLapses(store: store)
        func expired() async throws -> [SubscriberEvent] {
            try await store.events(appId: "app", after: 0, types: [.entitlementExpired], limit: 100).map(\.event)
        }
        #expect(try await sweep(now: t0.addingTimeInterval(90_000), limit: 10) == 0, "nothing is due before its end")
        #expect(try await expired().isEmpty)

        // Carol's grace period runs out with the renewal still failing.
        #expect(try await sweep(now: graceEnd.addingTimeInterval(5), limit: 10) == 1)
        let carol = try await store.events(appId: "app", after: 0, types: [.entitlementExpired, .gracePeriodExpired], limit: 10).map(\.event)
        #expect(carol.map(\.type) == [.entitlementExpired, .gracePeriodExpired] && carol.allSatisfy { $0.appUserId == "carol" })
        #expect(carol.last?.details?.gracePeriodExpiresDate == graceEnd && carol.allSatisfy { $0.occurredAt == graceEnd })

        // A week on, Bob's grant has ended: one event, dated at the grant's end, recorded now.
        let weekOn = t0.addingTimeInterval(7 * 86_400 + 20)
        #expect(try await sweep(now: weekOn, limit: 10) == 1)
        let bob = try await expired().filter { $0.appUserId == "bob" }
        #expect(bob.count == 1 && bob.first?.details?.grantId == grant.id && bob.first?.details?.entitlementId == "pro")
        let grantEnded = try await store.events(appId: "app", after: 0, types: [.promotionalGrantExpired], limit: 10).map(\.event)
        #expect(grantEnded.map(\.appUserId) == ["bob"] && grantEnded.first?.details?.grantId == grant.id)
        #expect(bob.first?.occurredAt == grant.expiresAt && bob.first?.recordedAt == weekOn)
        #expect(bob.first?.entitlements?.entitlements["pro"]?.isActive == false, "the event carries the view at its instant")
        #expect(try await sweep(now: weekOn.addingTimeInterval(1), limit: 10) == 0, "told once: nothing is due any more")

        // Alice's renewal date passes in silence; three processes sweep at once.
        let monthOn = renewsAt.addingTimeInterval(30)
        async let first = sweep(now: monthOn, limit: 10)
        async let second = sweep(now: monthOn, limit: 10)
        async let third = sweep(now: monthOn, limit: 10)
        _ = try await (first, second, third)
        let alice = try await expired().filter { $0.appUserId == "alice" }
        #expect(alice.count == 1, "one entitlement_expired however many sweeps: \(alice.map(\.id))")
        #expect(alice.first?.occurredAt == renewsAt && alice.first?.transactionId == "l1")
        #expect(try await sweep(now: monthOn.addingTimeInterval(60), limit: 10) == 0)

        let all = try await store.events(appId: "app", after: 0, types: [], limit: 100).map(\.event)
        #expect(!all.contains { $0.type == .reassessment }, "the sweep's trigger is never recorded")
        #expect(all.filter { $0.appUserId == "alice" }.map(\.sequence) == Array(1...Int64(all.filter { $0.appUserId == "alice" }.count)))
        let read = try await ReadSubscriber(store: store)(appId: "app", appUserId: "alice", now: monthOn)
        #expect(read.entitlements["pro"]?.isActive == false && all.last { $0.appUserId == "alice" }?.entitlements == read)
    }
}
