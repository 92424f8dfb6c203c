import AppStoreModels
import AppStoreSimulator
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

@Suite("outage policy: provisional access from locally verified receipts")
struct OutagePolicyTests {
    let t0 = referenceTime

    @Test("the planner unlocks access products only, never past the purchase's own end or the policy's limit")
    func planner() {
        let catalog: [String: Product] = [
            "coins": Product(productId: "coins", type: .consumable, creditAmount: 10),
            "pro": Product(productId: "pro", type: .autoRenewable),
            "ads": Product(productId: "ads", type: .nonConsumable),
            "season": Product(productId: "season", type: .nonRenewing, duration: "P3M"),
        ]
        let policy = OutagePolicy(enabled: true, afterSeconds: 60, provisionalSeconds: 86_400)
        func purchase(
            _ product: String, _ id: String, expires: Date? = nil, cancelled: Date? = nil, bought: Date? = nil
        )
            -> ProvisionalPlanner.Purchase
        {
            ProvisionalPlanner.Purchase(
                productId: product, transactionId: id, originalTransactionId: id, purchaseDate: bought ?? t0.addingTimeInterval(-3600),
                expiresDate: expires, cancellationDate: cancelled)
        }
        let grants = ProvisionalPlanner.plan(
            [
                purchase("coins", "1"), purchase("pro", "2", expires: t0.addingTimeInterval(600)),
                purchase("pro", "3", expires: t0.addingTimeInterval(-1)), purchase("ads", "4"),
                purchase("ads", "5", cancelled: t0.addingTimeInterval(-10)), purchase("season", "6"),
                purchase("season", "7", bought: t0.addingTimeInterval(-200 * 86_400)), purchase("unknown", "8"),
            ], catalog: catalog, policy: policy, appId: "app", appUserId: "u", verificationId: "v", now: t0)
        #expect(grants.map(\.transactionId) == ["2", "4", "6"])
        #expect(grants.first { $0.transactionId == "2" }?.expiresAt == t0.addingTimeInterval(600))
        #expect(grants.first { $0.transactionId == "4" }?.expiresAt == t0.addingTimeInterval(86_400))
    }

    @Test("stored with the retry, shown until they end, removed when Apple answers; a stale lease writes nothing", arguments: StoreFactory.all)
    func storage(factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.seedProducts(appId: "app", products: [Product(productId: "ads", type: .nonConsumable)], now: t0)
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "h", evidence: .receipt(base64: "aA==")), now: t0)
        let stale = try #require(try await store.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "a", now: t0, leaseDuration: 30).first)
        let lease = try #require(
            try await store.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "b", now: t0.addingTimeInterval(31), leaseDuration: 30).first)
        let grant = ProvisionalGrant(
            appId: "app", appUserId: "alice", verificationId: submitted.verification.id, transactionId: "t1", originalTransactionId: "t1",
            productId: "ads", expiresAt: t0.addingTimeInterval(3600))
        let report = AttemptReport(statuses: [], environment: nil, reason: "apple_http_503")
        #expect(
            try await VerificationOutcomes(store: store).scheduleRetry(
                stale, verificationId: submitted.verification.id, report: report, at: t0.addingTimeInterval(60), provisional: [grant], now: t0)
                == false)
        #expect(try await store.provisionalGrants(appId: "app", appUserId: "alice", now: t0).isEmpty)
        #expect(
            try await VerificationOutcomes(store: store).scheduleRetry(
                lease, verificationId: submitted.verification.id, report: report, at: t0.addingTimeInterval(60), provisional: [grant], now: t0))
        #expect(try await store.provisionalGrants(appId: "app", appUserId: "alice", now: t0) == [grant])
        #expect(try await store.provisionalGrants(appId: "app", appUserId: "alice", now: t0.addingTimeInterval(3601)).isEmpty)
        #expect(try await store.verification(id: submitted.verification.id)?.state == .retryScheduled)

        // Apple answers: the grant transaction removes the provisional access.
        let next = try #require(
            try await store.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "c", now: t0.addingTimeInterval(61), leaseDuration: 30).first)
        let response = VerifyReceiptResponse(
            status: .valid, environment: .sandbox,
            receipt: ReceiptInfo(
                bundleId: "com.example",
                inApp: [
                    InAppTransaction(productId: "ads", transactionId: "t1", originalTransactionId: "t1", purchaseDate: t0, originalPurchaseDate: t0)
                ]))
        let request = GrantRequest(appId: "app", bundleId: "com.example", bindingPolicy: .refuse)
        _ = try await VerificationOutcomes(store: store).completeVerified(
            next, verificationId: submitted.verification.id, evidence: PurchaseEvidence(verifyReceipt: response, environment: .sandbox)!,
            report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0.addingTimeInterval(62))
        #expect(try await store.provisionalGrants(appId: "app", appUserId: "alice", now: t0.addingTimeInterval(62)).isEmpty)
    }

    @Test("over HTTP: Apple down past the threshold gives provisional access (policy on only); Apple back replaces it with the grant")
    func endToEnd() async throws {
        for enabled in [false, true] {
            try await withStack(configure: { c in
                c.outagePolicy = OutagePolicy(enabled: enabled, afterSeconds: 0.5, provisionalSeconds: 3600)
                c.retry = RetryPolicy(base: 0.3, cap: 0.5, jitter: 0)
            }) { stack in
                let api = stack.api
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let receipt = try await stack.simulator.purchase(device: device, productId: "com.example.removeads").receipt
                // Time moves at the test's word while Apple is down: each step lets every due
                // attempt run, then moves past the next retry (0.3 s, then 0.5 s apart).
                stack.clock.freeze()
                // Apple stays down until the test brings it back.
                try await stack.simulator.outage(seconds: 3600)
                let posted = try await api.postReceipt(appUserId: "alice", receipt: receipt)
                #expect(posted.status == 202)
                let id = try #require(posted.json["id"] as? String)
                /// Apple has failed for longer than the threshold and another attempt ran (the
                /// third runs a second after the receipt was accepted, past the 0.5 s threshold);
                /// with the policy on, the provisional access shows (the outage's age counts from
                /// when Apple's health went down, a few attempts in).
                func longEnough() async throws -> Bool {
                    guard try await api.verification(id).json["attempts"] as? Int ?? 0 >= 3 else { return false }
                    guard enabled else { return true }
                    return try await !api.subscriber("alice").provisionalEntitlements.isEmpty
                }
                var steps = 0
                while try await !longEnough(), steps < 20 {
                    try await stack.settle()
                    stack.clock.advance(by: 0.5)
                    steps += 1
                }
                try await stack.settle()
                let verification = try await api.verification(id).json
                #expect(verification["state"] as? String == "retry_scheduled" && (verification["attempts"] as? Int ?? 0) >= 3, "\(verification)")
                let during = try await api.subscriber("alice")
                if enabled { #expect(!during.provisionalEntitlements.isEmpty, "provisional access shows while Apple is down: \(during)") }
                #expect(during.activeEntitlements.isEmpty, "nothing is granted for real while Apple is down")
                #expect(during.provisionalEntitlements.map(\.productId) == (enabled ? ["com.example.removeads"] : []))
                // Apple is back, and time runs again.
                stack.clock.thaw()
                try await stack.simulator.setFaults(FaultConfiguration.none)
                let final = try await api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
                let after = try await api.subscriber("alice")
                #expect(after.activeEntitlements == ["com.example.removeads"] && after.provisionalEntitlements.isEmpty)
                #expect(try await stack.store.provisionalGrants(appId: "demo", appUserId: "alice", now: Date()).isEmpty)
                let ledger = try await stack.store.ledger(
                    LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture))
                #expect(ledger.count == 1, "provisional access never reaches the ledger")
            }
        }
    }
}
