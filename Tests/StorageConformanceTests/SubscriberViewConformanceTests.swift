import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    @Test(
        "the subscriber read (one storage call) equals the view their last event carries: entitlement states, aliases, app transaction and credits alike",
        arguments: StoreFactory.all)
    func viewReadEqualsLastEvent(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 5_990_000, currency: "USD"),
            now: t0)
        try await store.seedEntitlements(appId: "app", definitions: [EntitlementDefinition(id: "pro", products: ["monthly"])], now: t0)
        // An anonymous id with the device's app transaction, then linked to alice: both belong
        // to her view before her purchase is recorded.
        let anonymous = "$anon:" + UUID().uuidString.lowercased()
        _ = try await store.recordAppTransaction(appId: "app", appUserId: anonymous, appTransaction("7000000000000009", version: "1.4", signed: t0))
        _ = try await ManageIdentity(store: store).logIn(appId: "app", anonymousId: anonymous, appUserId: "alice", policy: .transfer, now: t0)

        var purchase = PurchaseEvidence.Purchase(transactionId: "v1", originalTransactionId: "v1", productId: "monthly", purchaseDate: t0)
        purchase.expiresDate = t0.addingTimeInterval(30 * 86_400)
        // Turned off at once: the unsubscribe is first seen now, a stored entitlement state.
        let submitted = try await SubmitEvidence(store: store)(submission(receipt: "view"), now: t0)
        let leased = try #require(try await lease(store, at: t0).first { $0.jobId == submitted.verification.jobId })
        let evidence = PurchaseEvidence(
            source: .notification, bundleId: "com.example", environment: "sandbox", purchases: [purchase],
            renewals: [
                "v1": .init(
                    autoRenewEnabled: false, autoRenewProductId: "monthly", inBillingRetry: false, gracePeriodExpiresDate: nil,
                    expirationIntent: nil, signedAt: t0)
            ])
        _ = try await VerificationOutcomes(store: store).completeVerified(
            leased, verificationId: submitted.verification.id, evidence: evidence,
            report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0)

        let read = try await ReadSubscriber(store: store)(appId: "app", appUserId: "alice", now: t0)
        let events = try await store.subscriberEvents(appId: "app", appUserId: "alice", afterSequence: 0, limit: 100)
        let last = try #require(events.last?.event.entitlements)
        #expect(read.entitlements["pro"]?.unsubscribeDetectedAt == t0, "the stored state annotates the read")
        #expect(read.aliases == [anonymous] && read.appTransaction?.originalAppVersion == "1.4")
        #expect(last == read, "the GET's view and the last event's differ:\n\(last)\n\(read)")
    }
}
