import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

/// The application layer's submission and notification use cases over every storage adapter:
/// the decisions are Core's, the adapters only apply them.
@Suite("use cases over storage")
struct UseCaseTests {
    let t0 = referenceTime

    func notification(_ uuid: String, original: String? = "1", purchase: IngestNotification.Purchase) -> IngestNotification.Notification {
        IngestNotification.Notification(
            appId: "app", notificationUUID: uuid, notificationType: "DID_RENEW", subtype: nil, signedDate: t0,
            originalTransactionId: original, environment: "sandbox", payload: "payload-\(uuid)", version: .v2, purchase: purchase)
    }

    @Test("SubmitEvidence: a new verification starts in the lifecycles' initial states; the same post returns it", arguments: StoreFactory.all)
    func submission(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submit = SubmitEvidence(store: store)
        let evidence = EvidenceSubmission(
            appId: "app", appUserId: "alice", evidenceHash: "h", evidence: .receipt(base64: "cmVjZWlwdA=="), claims: ["9", "9", "8"])
        let first = try await submit(evidence, now: t0)
        #expect(first.created && first.verification.state == VerificationLifecycle.initial)
        let again = try await submit(evidence, now: t0.addingTimeInterval(1))
        #expect(!again.created && again.verification.id == first.verification.id)
        var refresh = evidence
        refresh.refresh = true
        let pendingRefresh = try await submit(refresh, now: t0.addingTimeInterval(2))
        #expect(!pendingRefresh.created, "a refresh waits until the previous generation has ended")
        var other = evidence
        other.appUserId = "bob"
        let bob = try await submit(other, now: t0.addingTimeInterval(3))
        #expect(bob.created && bob.verification.id != first.verification.id)
        let jobs = try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "t", now: t0.addingTimeInterval(4), leaseDuration: 30)
        #expect(Set(jobs.map(\.jobId)) == [first.verification.jobId, bob.verification.jobId])
    }

    @Test("IngestNotification: outcomes from the verified purchase; nothing submitted without an owner", arguments: StoreFactory.all)
    func outcomes(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let ingest = IngestNotification(store: store)
        let consumption = try await ingest(notification("c", purchase: .consumptionRequest), now: t0)
        #expect(consumption.created && consumption.outcome == .consumptionRequested && consumption.verificationId == nil)
        let rejected = try await ingest(notification("r", purchase: .rejected(.jwsSignatureInvalid)), now: t0)
        #expect(rejected.outcome == .rejected(.jwsSignatureInvalid) && rejected.outcome.rawValue == "jws_signature_invalid")
        let unowned = try await ingest(notification("u", purchase: .grant(.notification(signedPayload: "x"), evidenceHash: "x")), now: t0)
        #expect(unowned.outcome == .unowned && unowned.verificationId == nil)
        let anonymous = try await ingest(
            notification("a", original: nil, purchase: .grant(.notification(signedPayload: "y"), evidenceHash: "y")), now: t0)
        #expect(anonymous.outcome == .unowned)
        var consent = notification("rc", original: nil, purchase: .none(.noTransaction))
        consent.consent = .unverified(.appTransactionUnreadable)
        #expect(try await ingest(consent, now: t0).outcome == .appTransactionUnreadable)
        consent.notificationUUID = "rc-2"
        consent.consent = .appTransaction(id: "customer-nobody-knows", occurredAt: t0)
        #expect(try await ingest(consent, now: t0).outcome == .consentRescindedUnknownCustomer)
        let duplicate = try await ingest(notification("c", purchase: .consumptionRequest), now: t0)
        #expect(!duplicate.created)
        #expect(try await store.verificationCounts().values.reduce(0, +) == 0)
    }

    @Test("IngestNotification: a stored notification is forwarded to the endpoints that take notifications only", arguments: StoreFactory.all)
    func forwards(factory: StoreFactory) async throws {
        let store = try await factory.make()
        var forwarding = WebhookEndpoint(
            id: "fwd", appId: "app", url: "https://example.com/a", secrets: [.init(value: "whsec_AAAA", createdAt: t0)], createdAt: t0,
            updatedAt: t0)
        forwarding.appStoreNotifications = true
        let events = WebhookEndpoint(
            id: "events", appId: "app", url: "https://example.com/b", secrets: [.init(value: "whsec_AAAA", createdAt: t0)],
            createdAt: t0, updatedAt: t0)
        try await store.createEndpoint(forwarding)
        try await store.createEndpoint(events)
        _ = try await IngestNotification(store: store)(notification("n", purchase: .none(.noTransaction)), now: t0)
        _ = try await IngestNotification(store: store)(notification("n", purchase: .none(.noTransaction)), now: t0)
        #expect(try await store.deliveries(endpointId: "fwd", state: nil, limit: 10).count == 1)
        #expect(try await store.deliveries(endpointId: "events", state: nil, limit: 10).isEmpty)
    }
}
