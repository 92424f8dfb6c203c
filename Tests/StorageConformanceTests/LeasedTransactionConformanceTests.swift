import AppStoreModels
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

/// The transaction port the use cases run over, on every adapter: lease guard, guarded writes,
/// all-or-nothing.
@Suite("storage conformance: leased transactions")
struct LeasedTransactionConformanceTests {
    let t0 = referenceTime

    func submitAndLease(_ store: any StorekeeperStore) async throws -> (SubmissionResult, JobLease) {
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "h", evidence: .receipt(base64: "cg==")), now: t0)
        let lease = try #require(
            try await store.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "test", now: t0, leaseDuration: 30).first)
        return (submitted, lease)
    }

    @Test("the use case reads the verification as stored and the grant facts it names", arguments: StoreFactory.all)
    func reads(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (submitted, lease) = try await submitAndLease(store)
        let query = GrantFactsQuery(appId: "app", transactionIds: ["t1"], originalTransactionIds: ["t1"])
        let seen = try await store.withLease(lease, verificationId: submitted.verification.id, reading: query, now: t0) {
            verification, facts in
            LeasedDecision(
                writes: [], result: "\(verification?.state.rawValue ?? "none")/\(verification?.appUserId ?? "")/\(facts.transactions.count)")
        }
        #expect(seen == "pending/alice/0")
        let missing = try await store.withLease(lease, verificationId: "no-such-id", reading: .nothing, now: t0) { verification, _ in
            LeasedDecision(writes: [], result: verification == nil)
        }
        #expect(missing == true)
    }

    @Test(
        "the outbox records an event id once, numbers events per subscriber and orders the feed by commit",
        arguments: StoreFactory.all)
    func outbox(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (submitted, lease) = try await submitAndLease(store)
        func event(_ name: String, _ user: String, _ type: EventType = .consumablePurchase) -> SubscriberEvent {
            SubscriberEvent(id: name, type: type, appId: "app", environment: "sandbox", appUserId: user, occurredAt: t0, recordedAt: t0)
        }
        func record(_ events: [SubscriberEvent]) async throws {
            _ = try await store.withLease(lease, verificationId: submitted.verification.id, reading: .nothing, now: t0) { _, _ in
                LeasedDecision(writes: [.events(EventBatch(events: events))], result: true)
            }
        }
        try await record([event("e1", "alice"), event("e2", "bob", .refund), event("e3", "alice")])
        try await record([event("e1", "alice"), event("e4", "alice")])  // e1 again: nothing, and no number used.
        let feed = try await store.events(appId: "app", after: 0, types: [], limit: 10)
        #expect(feed.map(\.event.id) == ["e1", "e2", "e3", "e4"])
        #expect(feed.map(\.cursor) == feed.map(\.cursor).sorted() && Set(feed.map(\.cursor)).count == 4)
        #expect(feed.map(\.event.sequence) == [1, 1, 2, 3])
        #expect(feed.allSatisfy { $0.event.entitlements?.appUserId == $0.event.appUserId })
        #expect(try await store.events(appId: "app", after: feed[1].cursor, types: [], limit: 10).map(\.event.id) == ["e3", "e4"])
        #expect(try await store.events(appId: "app", after: 0, types: [.refund], limit: 10).map(\.event.id) == ["e2"])
        #expect(try await store.events(appId: "app", after: 0, types: [], limit: 2).map(\.event.id) == ["e1", "e2"])
        #expect(try await store.events(appId: "other", after: 0, types: [], limit: 10).isEmpty)
        let alice = try await store.subscriberEvents(appId: "app", appUserId: "alice", afterSequence: 1, limit: 10)
        #expect(alice.map(\.event.id) == ["e3", "e4"])
    }

    @Test("a guarded write that finds its row moved on rolls back the whole transaction", arguments: StoreFactory.all)
    func guardedWriteRollsBack(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (submitted, lease) = try await submitAndLease(store)
        let id = submitted.verification.id
        await #expect(throws: StorageConflict.self) {
            _ = try await store.withLease(lease, verificationId: id, reading: .nothing, now: t0) { _, _ in
                // The job write is valid; the verification is not `verifying`, so its guard fails.
                LeasedDecision(
                    writes: [
                        .job(JobLifecycle.ending(.completed(reason: nil))),
                        .verification(VerificationChange(id: id, from: .verifying, to: .verified, finalizes: true)),
                    ], result: true)
            }
        }
        // Nothing of it stayed: the job is still leased, the verification still pending.
        #expect(try await store.jobCounts()[.running] == 1)
        #expect(try await store.verification(id: id)?.state == .pending)
        #expect(try await VerificationOutcomes(store: store).markVerifying(lease, verificationId: id, now: t0))
        #expect(try await store.verification(id: id)?.state == .verifying)
    }

    @Test("a lost lease runs no decision and writes nothing", arguments: StoreFactory.all)
    func lostLease(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (submitted, stale) = try await submitAndLease(store)
        _ = try #require(
            try await store.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "b", now: t0.addingTimeInterval(31), leaseDuration: 30).first)
        let result = try await store.withLease(stale, verificationId: submitted.verification.id, reading: .nothing, now: t0) { _, _ in
            Issue.record("a stale lease must not reach the decision")
            return LeasedDecision(writes: [.job(JobLifecycle.ending(.completed(reason: nil)))], result: true)
        }
        #expect(result == nil)
        #expect(try await store.jobCounts()[.running] == 1)
    }

    @Test("a verification finalized by hand is not changed by a late attempt; its job is discarded", arguments: StoreFactory.all)
    func refusedAttempt(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (submitted, lease) = try await submitAndLease(store)
        let id = submitted.verification.id
        // Simulate an operator's edit through the port itself: the verification becomes invalid, the job stays leased.
        _ = try await store.withLease(lease, verificationId: id, reading: .nothing, now: t0) { _, _ in
            LeasedDecision(
                writes: [
                    .verification(
                        VerificationChange(
                            id: id, from: .pending, to: .invalid, report: AttemptReport(statuses: [], environment: nil, reason: "manual"),
                            finalizes: true))
                ], result: true)
        }
        let outcomes = VerificationOutcomes(store: store)
        #expect(try await outcomes.markVerifying(lease, verificationId: id, now: t0) == false)
        #expect(try await store.verification(id: id)?.state == .invalid)
        #expect(try await store.jobCounts()[.discarded] == 1)
    }

    @Test("a committed change of a verification wakes its waiters", arguments: StoreFactory.all)
    func watchIsTold(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (submitted, lease) = try await submitAndLease(store)
        let id = submitted.verification.id
        let ticket = store.verificationWatch.register(id)
        let woke = Task { await ticket.wait(timeout: .seconds(3600)) }
        #expect(try await VerificationOutcomes(store: store).markVerifying(lease, verificationId: id, now: t0))
        // Only the notification can end an hour's wait within the watchdog's minute.
        #expect(await ends(woke, within: 60), "the commit did not wake the waiter")
    }
}
