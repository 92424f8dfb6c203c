import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import StorekeeperWire
import TestFixtures
import Testing

/// Webhook endpoints and deliveries on every adapter: the outbox enqueues a delivery and its job
/// per routed endpoint, deliveries wait in order per subscriber, an attempt ends in the job's
/// transaction, a dead delivery pauses its endpoint, replay and delete.
@Suite("storage conformance: webhooks")
struct WebhookStoreConformanceTests {
    let t0 = referenceTime

    func endpoint(_ id: String, types: [EventType] = []) -> WebhookEndpoint {
        WebhookEndpoint(
            id: id, appId: "app", url: "http://127.0.0.1:1/hook", eventTypes: types, secrets: [.init(value: "whsec_AAAA", createdAt: t0)],
            createdAt: t0, updatedAt: t0)
    }

    func event(_ id: String, _ user: String, _ type: EventType = .consumablePurchase) -> SubscriberEvent {
        SubscriberEvent(id: id, type: type, appId: "app", environment: "sandbox", appUserId: user, occurredAt: t0, recordedAt: t0)
    }

    func lease(_ store: any StorekeeperStore, at: Date) async throws -> [JobLease] {
        try await store.leaseJobs(kinds: [deliverWebhookJobKind], limit: 10, owner: "test", now: at, leaseDuration: 30)
    }

    @Test("an event recorded before M0010 (milliseconds in its body) is read, and sent in the wire form")
    func legacyEventBody() throws {
        var old = event("e0", "alice")
        old.sequence = 4
        let stored = StoredJSON.encode(old)
        #expect(stored.contains(#""occurredAt":"#) && !stored.contains(#""occurredAt":""#), "the stored dialect writes numbers")
        #expect(StoredEventBody.event(body: stored, wire: false).map(WireJSON.encode) == WireJSON.encode(old))
        #expect(StoredEventBody.wireBody(body: stored, wire: false) == WireJSON.encode(old))
        #expect(StoredEventBody.wireBody(body: WireJSON.encode(old), wire: true) == WireJSON.encode(old))
        #expect(StoredEventBody.event(body: WireJSON.encode(old), wire: true)?.sequence == 4)
        #expect(StoredEventBody.event(body: stored, wire: true) == nil, "a body read in the wrong dialect does not pass for an event")
    }

    @Test("routed events become deliveries with jobs; order per subscriber; attempts end in the job's transaction", arguments: StoreFactory.all)
    func deliveries(factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.createEndpoint(endpoint("all"))
        try await store.createEndpoint(endpoint("refunds", types: [.refund]))
        try await store.recordEvents(EventBatch(events: [event("e1", "alice"), event("e2", "alice"), event("e3", "bob")]), now: t0)
        try await store.recordEvents(EventBatch(events: [event("e1", "alice")]), now: t0)  // recorded already: nothing
        let leases = try await lease(store, at: t0)
        #expect(leases.count == 3, "one delivery per event for the endpoint without filters")
        #expect(try await store.deliveries(endpointId: "refunds", state: nil, before: nil, limit: 10).isEmpty)

        var works: [String: DeliveryWork] = [:]
        for lease in leases {
            let work = try #require(try await store.deliveryForJob(jobId: lease.jobId))
            works[work.payload.id] = work
        }
        // The body is the event's wire form as stored: the feed's event, encoded, byte for byte.
        for recorded in try await store.events(appId: "app", after: 0, types: [], limit: 10).map(\.event) {
            guard case .event(let id, let body) = works[recorded.id]?.payload else {
                Issue.record("no delivery of \(recorded.id)")
                continue
            }
            #expect(id == recorded.id && body == WireJSON.encode(recorded) && body.contains(#""occurredAt":"2"#))
        }
        // Read as one batch, the same; a job with no delivery is absent.
        let batch = try await store.deliveriesForJobs(jobIds: leases.map(\.jobId) + ["no-such-job"])
        #expect(batch.count == 3 && batch["no-such-job"] == nil)
        for lease in leases {
            let one = try #require(batch[lease.jobId])
            #expect(works[one.payload.id]?.delivery == one.delivery && one.endpoint?.id == "all")
            #expect((works[one.payload.id]?.earlierDueAt == nil) == (one.earlierDueAt == nil))
        }
        #expect(works["e1"]?.earlierDueAt == nil && works["e3"]?.earlierDueAt == nil)
        #expect(works["e2"]?.earlierDueAt != nil, "alice's second event waits for her first")
        #expect(works["e1"]?.endpoint?.id == "all" && works["e1"]?.delivery.sequence == 1 && works["e2"]?.delivery.sequence == 2)
        // One subscriber's deliveries to an endpoint, the latest event first (a customer's page).
        #expect(try await store.deliveries(endpointId: "all", appUserId: "alice", limit: 10).map(\.sequence) == [2, 1])
        #expect(try await store.deliveries(endpointId: "all", appUserId: "alice", limit: 1).map(\.eventId) == ["e2"])
        #expect(try await store.deliveries(endpointId: "refunds", appUserId: "alice", limit: 10).isEmpty)
        // The endpoint's list a page at a time, newest first: each page starts after the last read.
        let listed = try await store.deliveries(endpointId: "all", state: nil, before: nil, limit: 10)
        #expect(listed.count == 3)
        var paged: [String] = []
        var before: DeliveryPosition?
        while true {
            let page = try await store.deliveries(endpointId: "all", state: nil, before: before, limit: 2)
            paged += page.map(\.id)
            guard page.count == 2, let last = page.last else { break }
            before = DeliveryPosition(token: DeliveryPosition(createdAt: last.createdAt, id: last.id).token)
        }
        #expect(paged == listed.map(\.id), "pages in order, each delivery once")

        let outcomes = WebhookDeliveryOutcomes(store: store, schedule: WebhookRetrySchedule(delays: [10], maximumAge: 60, jitter: 0))
        let leaseOf = Dictionary(
            uniqueKeysWithValues: try leases.map { lease in (try #require(works.first { $0.value.delivery.id == lease.payload }?.key), lease) })
        let e1 = try #require(works["e1"])
        let attempt = DeliveryAttempt(deliveryId: e1.delivery.id, attempt: 1, at: t0, status: 200, latencyMs: 3)
        #expect(
            try await outcomes.finish(
                try #require(leaseOf["e1"]), work: e1, outcome: .delivered(status: 200), attempt: attempt, now: t0, unitRandom: 0) == .delivered)
        #expect(
            try await outcomes.finish(
                try #require(leaseOf["e1"]), work: e1, outcome: .delivered(status: 200), attempt: attempt, now: t0, unitRandom: 0) == nil,
            "a lease ends once")
        #expect(try await store.deliveryForJob(jobId: try #require(leaseOf["e2"]).jobId)?.earlierDueAt == nil, "alice's first is delivered")

        // An attempt that found its delivery in another state than it is now: nothing is
        // written, and the lease still holds, so the same attempt ends once it is told right.
        let e2 = try #require(works["e2"])
        let e2Lease = try #require(leaseOf["e2"])
        let e2Attempt = DeliveryAttempt(deliveryId: e2.delivery.id, attempt: 1, at: t0, status: 200, latencyMs: 3)
        func e2Change(from: WebhookDelivery.State) -> DeliveryChange {
            DeliveryChange(
                deliveryId: e2.delivery.id, attempt: e2Attempt, from: from, to: .delivered, nextAttemptAt: nil, firstAttemptAt: t0,
                job: JobLifecycle.ending(.completed(reason: nil)))
        }
        await #expect(throws: StorageConflict.self) { try await store.finishDeliveryAttempt(e2Lease, e2Change(from: .dead), now: t0) }
        #expect(try await store.attempts(deliveryId: e2.delivery.id).isEmpty, "no attempt recorded")
        #expect(try await store.deliveries(endpointId: "all", state: .pending, before: nil, limit: 10).contains { $0.id == e2.delivery.id })
        #expect(try await store.finishDeliveryAttempt(e2Lease, e2Change(from: .pending), now: t0), "the job is still leased")
        #expect(try await store.attempts(deliveryId: e2.delivery.id).map(\.status) == [200])
        #expect(try await store.finishDeliveryAttempt(e2Lease, e2Change(from: .delivered), now: t0) == false, "a lease ends once")

        // Bob's fails until the schedule runs out: dead, and the endpoint paused.
        let e3 = try #require(works["e3"])
        let failed = DeliveryAttempt(deliveryId: e3.delivery.id, attempt: 1, at: t0, status: 500, latencyMs: 3, responseExcerpt: "no")
        #expect(
            try await outcomes.finish(
                try #require(leaseOf["e3"]), work: e3, outcome: .failed(status: 500, retryAfter: nil), attempt: failed, now: t0, unitRandom: 0)
                == .retry(at: t0 + 10))
        let again = try #require(try await lease(store, at: t0 + 70).first { $0.payload == e3.delivery.id })
        let retried = try #require(try await store.deliveryForJob(jobId: again.jobId))
        #expect(retried.delivery.attempts == 1 && retried.delivery.firstAttemptAt == t0)
        let last = DeliveryAttempt(deliveryId: e3.delivery.id, attempt: 2, at: t0 + 70, status: 500, latencyMs: 3)
        #expect(
            try await outcomes.finish(
                again, work: retried, outcome: .failed(status: 500, retryAfter: nil), attempt: last, now: t0 + 70, unitRandom: 0)
                == .dead(pauseReason: DeliveryLifecycle.failingReason))
        #expect(try await store.attempts(deliveryId: e3.delivery.id).map(\.status) == [500, 500])
        #expect(try await store.endpoint(appId: "app", id: "all")?.state == .paused)
        let counts = try await store.deliveryCounts()
        #expect(counts[.dead] == 1 && counts[.delivered] == 2)

        // Replayed: pending again with a job due now; deleting the endpoint removes it all.
        let actions = WebhookEndpointActions(store: store)
        let endpoint = try #require(try await store.endpoint(appId: "app", id: "all"))
        #expect(try await actions.replay(endpoint: endpoint, deliveryId: nil, actor: AuditActor(name: "ops", reason: ""), now: t0 + 80) == 1)
        // Audited in the same transaction; a replay that finds nothing writes nothing.
        #expect(try await actions.replay(endpoint: endpoint, deliveryId: nil, actor: AuditActor(name: "ops", reason: ""), now: t0 + 81) == 0)
        let audit = try await store.auditEntries(appId: "app", after: 0, limit: 10).map(\.entry)
        #expect(audit.map(\.action) == ["webhook_replayed"] && audit.first?.actor == "ops" && audit.first?.subject == "all")
        #expect(try await store.deliveries(endpointId: "all", state: .dead, before: nil, limit: 10).isEmpty)
        #expect(try await lease(store, at: t0 + 80).contains { $0.payload == e3.delivery.id })
        #expect(try await actions.delete(appId: "app", id: "all", now: t0 + 90))
        #expect(try await store.deliveries(endpointId: "all", state: nil, before: nil, limit: 10).isEmpty)
        #expect(try await store.endpoints(appId: "app").map(\.id) == ["refunds"])
    }

    @Test(
        "batches telling the same subscribers in opposite orders, at once: no deadlock, cursors dense in commit order, each sequence dense; an event named twice in a batch is recorded once",
        arguments: StoreFactory.all)
    func concurrentBatches(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let users = ["alice", "bob", "carol"]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for round in 0..<12 {
                let order = round.isMultiple(of: 2) ? users : users.reversed()
                group.addTask {
                    try await store.recordEvents(EventBatch(events: order.map { event("r\(round)-\($0)", $0) }), now: t0)
                }
            }
            try await group.waitForAll()
        }
        try await store.recordEvents(EventBatch(events: [event("twice", "dave"), event("twice", "dave"), event("once", "dave")]), now: t0)
        let recorded = try await store.events(appId: "app", after: 0, types: [], limit: 100)
        #expect(recorded.map(\.cursor) == Array(1...Int64(12 * users.count + 2)), "every cursor once, none skipped")
        #expect(Set(recorded.map(\.event.id)).count == recorded.count)
        for user in users + ["dave"] {
            let sequences = recorded.filter { $0.event.appUserId == user }.map(\.event.sequence)
            #expect(sequences == Array(1...Int64(sequences.count)), "\(user)'s sequence dense and in cursor order")
        }
        #expect(recorded.filter { $0.event.appUserId == "dave" }.map(\.event.id) == ["twice", "once"])
    }

    @Test("a delivered event makes the subscriber's next one for the endpoint due at once, not at its wait's end", arguments: StoreFactory.all)
    func nextGoesAtOnce(factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.createEndpoint(endpoint("all"))
        try await store.recordEvents(EventBatch(events: [event("e1", "alice"), event("e2", "alice"), event("e3", "bob")]), now: t0)
        let leases = try await lease(store, at: t0)
        var works: [String: (JobLease, DeliveryWork)] = [:]
        for lease in leases {
            let work = try #require(try await store.deliveryForJob(jobId: lease.jobId))
            works[work.payload.id] = (lease, work)
        }
        let (e1Lease, e1) = try #require(works["e1"])
        let (e2Lease, _) = try #require(works["e2"])
        let (e3Lease, _) = try #require(works["e3"])
        // Alice's second waits behind her first, bob's is put off for a reason of its own.
        #expect(try await store.retryJob(e2Lease, at: t0 + 30, reason: "waiting_for_earlier_event", now: t0))
        #expect(try await store.retryJob(e3Lease, at: t0 + 30, reason: "endpoint_paused", now: t0))
        let outcomes = WebhookDeliveryOutcomes(store: store, schedule: WebhookRetrySchedule(delays: [10], maximumAge: 60, jitter: 0))
        let attempt = DeliveryAttempt(deliveryId: e1.delivery.id, attempt: 1, at: t0 + 1, status: 200, latencyMs: 3)
        #expect(
            try await outcomes.finish(e1Lease, work: e1, outcome: .delivered(status: 200), attempt: attempt, now: t0 + 1, unitRandom: 0) == .delivered
        )
        let due = try await lease(store, at: t0 + 1).map(\.payload)
        #expect(due == [try #require(works["e2"]).1.delivery.id], "alice's next goes now; bob's keeps its time")
    }

    @Test("retention deletes old events nothing needs, keeps those a dead delivery needs, and never reuses a cursor", arguments: StoreFactory.all)
    func retention(factory: StoreFactory) async throws {
        let store = try await factory.make()
        try await store.createEndpoint(endpoint("all", types: [.refund]))
        var old = [event("old1", "alice"), event("old2", "bob"), event("old3", "carol", .refund)]
        for index in old.indices { old[index].recordedAt = t0 - 40 * 86_400 }
        try await store.recordEvents(EventBatch(events: old), now: t0)
        // carol's refund goes to the endpoint and dies there: its event must stay for a replay.
        let lease = try #require(try await lease(store, at: t0).first)
        let work = try #require(try await store.deliveryForJob(jobId: lease.jobId))
        let outcomes = WebhookDeliveryOutcomes(store: store, schedule: WebhookRetrySchedule(delays: [1], maximumAge: 1, jitter: 0))
        let attempt = DeliveryAttempt(deliveryId: work.delivery.id, attempt: 1, at: t0, status: 410, latencyMs: 1)
        #expect(try await outcomes.finish(lease, work: work, outcome: .gone, attempt: attempt, now: t0, unitRandom: 0) != nil)
        try await store.recordEvents(EventBatch(events: [event("new1", "alice")]), now: t0)

        #expect(try await store.deleteEvents(recordedBefore: t0 - 30 * 86_400, limit: 1) == 1, "in batches")
        #expect(try await store.deleteEvents(recordedBefore: t0 - 30 * 86_400, limit: 10) == 1)
        #expect(try await store.deleteEvents(recordedBefore: t0 - 30 * 86_400, limit: 10) == 0)
        let left = try await store.events(appId: "app", after: 0, types: [], limit: 10)
        #expect(left.map(\.event.id) == ["old3", "new1"])
        try await store.recordEvents(EventBatch(events: [event("new2", "alice")]), now: t0)
        let all = try await store.events(appId: "app", after: 0, types: [], limit: 10)
        #expect(all.last?.cursor == 5 && all.last?.event.sequence == 3, "counters go on past deleted events")
    }
}
