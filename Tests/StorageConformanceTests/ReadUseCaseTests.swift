import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

/// The use cases behind the read and operator routes, over every storage adapter: what each
/// answers, and what each refuses to show or change.
@Suite("read and operator use cases over storage")
struct ReadUseCaseTests {
    let t0 = referenceTime
    let grants = StorageConformanceTests()

    func purchase(_ id: String, original: String? = nil, appTransactionId: String? = nil) -> PurchaseEvidence.Purchase {
        var purchase = PurchaseEvidence.Purchase(transactionId: id, originalTransactionId: original ?? id, productId: "coins", purchaseDate: t0)
        purchase.appTransactionId = appTransactionId
        return purchase
    }

    @Test("ManageCatalog: a second create is refused, a save changes it, only products Ready for Sale are sellable", arguments: StoreFactory.all)
    func catalog(factory: StoreFactory) async throws {
        let catalog = ManageCatalog(store: try await factory.make())
        let coins = Product(productId: "coins", type: .consumable, creditAmount: 10)
        #expect(try await catalog.create(appId: "app", product: coins, now: t0))
        var edited = coins
        edited.creditAmount = 99
        #expect(try await catalog.create(appId: "app", product: edited, now: t0) == false)
        #expect(try await catalog.products(appId: "app").map(\.creditAmount) == [10], "a refused create changes nothing")
        try await catalog.save(appId: "app", product: Product(productId: "gems", type: .consumable, status: .waitingForReview), now: t0)
        #expect(Set(try await catalog.products(appId: "app").map(\.productId)) == ["coins", "gems"])
        #expect(try await catalog.sellable(appId: "app").map(\.productId) == ["coins"])
        #expect(try await catalog.sellable(appId: "other").isEmpty)
        #expect(try await catalog.delete(appId: "app", productId: "gems"))
        #expect(try await catalog.delete(appId: "app", productId: "gems") == false)
    }

    @Test("ReadVerifications: another app's verification reads as absent; lists oldest first", arguments: StoreFactory.all)
    func verifications(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submit = SubmitEvidence(store: store)
        let first = try await submit(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "a", evidence: .receipt(base64: "YQ==")), now: t0)
        let second = try await submit(
            EvidenceSubmission(appId: "app", appUserId: "bob", evidenceHash: "b", evidence: .receipt(base64: "Yg==")), now: t0.addingTimeInterval(5))
        let read = ReadVerifications(store: store)
        #expect(try await read.verification(id: first.verification.id, appId: "app")?.appUserId == "alice")
        #expect(try await read.verification(id: first.verification.id, appId: "other") == nil)
        #expect(try await read.verification(id: first.verification.id, appId: nil) != nil, "the operator sees every app")
        #expect(try await read.verification(id: "nope", appId: "app") == nil)
        let all = try await read.list(appId: "app", states: [], createdBefore: nil, limit: 10)
        #expect(all.map(\.id) == [first.verification.id, second.verification.id])
        #expect(
            try await read.list(appId: "app", states: [], createdBefore: t0.addingTimeInterval(1), limit: 10).map(\.id) == [first.verification.id])
        #expect(try await read.list(appId: "other", states: [], createdBefore: nil, limit: 10).isEmpty)
    }

    @Test("AwaitVerification: a settled verification comes back at once; an open one at the deadline, as stored", arguments: StoreFactory.all)
    func await(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "a", evidence: .receipt(base64: "YQ==")), now: t0)
        // A deadline already passed: no wait at all, the record as submitted.
        let open = try await AwaitVerification(store: store)(submitted.verification, until: .now)
        #expect(open.id == submitted.verification.id && open.state == VerificationLifecycle.initial)
        var settled = submitted.verification
        settled.state = .verified
        let answer = try await AwaitVerification(store: store)(settled, until: .now + .seconds(3600))
        #expect(answer.state == .verified, "a final verification is not read again or waited on")
    }

    @Test("RefreshSubscriber: asks about the user's own original transactions only; nothing known, nothing submitted", arguments: StoreFactory.all)
    func refresh(factory: StoreFactory) async throws {
        let store = try await grants.make(factory)
        try await grants.grantSigned(store, [purchase("1"), purchase("2", original: "1"), purchase("5")], user: "alice", tag: "r1")
        try await grants.grantSigned(store, [purchase("9")], user: "bob", tag: "r2")
        let refresh = RefreshSubscriber(store: store)
        #expect(try await refresh(appId: "app", appUserId: "carol", now: t0) == nil)
        #expect(try await refresh(appId: "other", appUserId: "alice", now: t0) == nil)
        let submitted = try #require(try await refresh(appId: "app", appUserId: "alice", now: t0))
        #expect(submitted.created && submitted.verification.appUserId == "alice")
        let job = try #require(
            try await store.leaseJobs(kinds: [refreshFromServerAPIJobKind], limit: 10, owner: "t", now: t0, leaseDuration: 30).first)
        let (_, evidence) = try #require(try await store.verificationForJob(jobId: job.jobId))
        #expect(evidence.split(separator: ",").sorted() == ["1", "5"], "each original transaction once, none of bob's")
    }

    @Test("ReadPurchases: the holders of one Apple account, each user once; none for an unknown account", arguments: StoreFactory.all)
    func holders(factory: StoreFactory) async throws {
        let store = try await grants.make(factory)
        try await grants.grantSigned(store, [purchase("1", appTransactionId: "70"), purchase("2", appTransactionId: "70")], user: "alice", tag: "h1")
        try await grants.grantSigned(store, [purchase("3", appTransactionId: "70")], user: "bob", tag: "h2")
        let read = ReadPurchases(store: store)
        let holders = try #require(try await read.holders(appId: "app", appTransactionId: "70"))
        #expect(holders.appUserIds == ["alice", "bob"] && holders.transactions.map(\.transactionId) == ["1", "2", "3"])
        #expect(try await read.holders(appId: "app", appTransactionId: "71") == nil)
        #expect(try await read.holders(appId: "other", appTransactionId: "70") == nil)
    }

    @Test(
        "WebhookEndpointActions: created paused says why; a test event is one delivery to that endpoint; skip only a dead one",
        arguments: StoreFactory.all)
    func endpoints(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let actions = WebhookEndpointActions(store: store)
        let paused = try await actions.create(
            WebhookEndpoint(
                id: "p", appId: "app", url: "https://example.com/p", secrets: [.init(value: "whsec_AAAA", createdAt: t0)], state: .paused,
                createdAt: t0, updatedAt: t0))
        #expect(paused.pausedReason != nil)
        #expect(try await actions.endpoint(appId: "app", id: "p")?.pausedReason == paused.pausedReason)
        let active = try await actions.create(
            WebhookEndpoint(
                id: "a", appId: "app", url: "https://example.com/a", secrets: [.init(value: "whsec_AAAA", createdAt: t0)], createdAt: t0,
                updatedAt: t0))
        #expect(active.pausedReason == nil)
        #expect(Set(try await actions.endpoints(appId: "app").map(\.id)) == ["a", "p"])
        #expect(try await actions.endpoint(appId: "other", id: "a") == nil)
        let eventId = try await actions.sendTest(to: active, now: t0)
        let deliveries = try await actions.deliveries(endpointId: "a", state: nil, before: nil, limit: 10)
        #expect(deliveries.count == 1 && deliveries.first?.delivery.eventId == eventId && deliveries.first?.attempts.isEmpty == true)
        #expect(try await actions.deliveries(endpointId: "p", state: nil, before: nil, limit: 10).isEmpty, "a test goes to the one endpoint asked")
        let delivery = try #require(deliveries.first).delivery
        #expect(
            try await actions.skip(endpoint: active, deliveryId: delivery.id, actor: AuditActor(name: "ops", reason: ""), now: t0) == false,
            "a pending delivery is not skipped")
        #expect(try await store.auditEntries(appId: "app", after: 0, limit: 10).isEmpty, "nothing skipped, nothing audited")
        let feed = ReadEventFeed(store: store)
        #expect(try await feed.events(appId: "app", after: 0, types: [.test], limit: 10).map(\.event.id) == [eventId])
        #expect(try await feed.events(appId: "app", after: 0, types: EventType.all.filter { $0 != .test }, limit: 10).isEmpty)
        #expect(try await feed.subscriberEvents(appId: "app", appUserId: "alice", afterSequence: 0, limit: 10).isEmpty)
    }

    @Test("ReadOperations: counts by state, flagged by age, paused endpoints, the oldest waiting verification", arguments: StoreFactory.all)
    func operations(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let read = ReadOperations(store: store)
        try await read.probe()
        let empty = try await read.counts(appIds: ["app"], flagBefore: t0, now: t0)
        #expect(empty.flagged == 0 && empty.waiting == 0 && empty.oldestWaitingSeconds == 0 && empty.pausedEndpoints == 0)
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "a", evidence: .receipt(base64: "YQ==")), now: t0)
        _ = try await WebhookEndpointActions(store: store).create(
            WebhookEndpoint(
                id: "p", appId: "app", url: "https://example.com/p", secrets: [.init(value: "whsec_AAAA", createdAt: t0)], state: .paused,
                createdAt: t0, updatedAt: t0))
        let lease = try #require(try await grants.lease(store, at: t0).first)
        let outcomes = VerificationOutcomes(store: store)
        #expect(try await outcomes.markVerifying(lease, verificationId: submitted.verification.id, now: t0))
        #expect(try await outcomes.release(lease, verificationId: submitted.verification.id, now: t0.addingTimeInterval(1)))
        let counts = try await read.counts(appIds: ["app", "other"], flagBefore: t0.addingTimeInterval(10), now: t0.addingTimeInterval(40))
        #expect(counts.verifications[.retryScheduled] == 1 && counts.waiting == 1 && counts.oldestWaitingSeconds == 40)
        #expect(counts.flagged == 1 && counts.pausedEndpoints == 1)
        #expect(try await read.counts(appIds: ["app"], flagBefore: t0, now: t0).flagged == 0, "not flagged before its age")
        #expect(counts.jobs.values.reduce(0, +) == 1)
    }
}
