import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

@testable import StorekeeperServer

/// Two worker processes share one database but keep Apple's health each for itself. These stand
/// two monitors on one store, at fixed instants, for what one learns from the other.
@Suite("Apple's health across worker processes")
struct AppleHealthMonitorTests {
    let endpoint = AppleHealthMonitor.Endpoint.verifyReceipt("production")
    let policy = AppleHealth.Policy(degradedAfterFailures: 1, downAfterFailures: 2, probeBaseSeconds: 1, probeCapSeconds: 5)

    func monitor(_ store: any StorekeeperStore) -> AppleHealthMonitor {
        AppleHealthMonitor(
            policy: policy, store: store, metrics: MetricsRegistry(), logger: Logger(label: "test"),
            releasePerSecond: 50, appIds: ["app", "other"])
    }

    func down(_ monitor: AppleHealthMonitor, at t: Date) async {
        for _ in 0..<policy.downAfterFailures { await monitor.record(endpoint, answered: false, probe: false, now: t) }
        #expect(monitor.downSince(endpoint) == t)
    }

    @Test(
        "a process still down adopts another's recovery from the database, at most one read a second; never an older one", arguments: StoreFactory.all
    )
    func adoption(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (first, second) = (monitor(store), monitor(store))
        let t0 = referenceTime
        await down(first, at: t0)
        await down(second, at: t0)
        #expect(await second.adoptRecovery(endpoint, now: t0.addingTimeInterval(1)) == false, "nobody has seen Apple answer")

        // The first process's probe gets an answer: it is healthy and shares it.
        await first.record(endpoint, answered: true, probe: true, now: t0.addingTimeInterval(10))
        #expect(first.downSince(endpoint) == nil)
        #expect(try await store.sharedAppleHealth(endpoint: endpoint.label) == SharedAppleHealth(state: .healthy, since: t0.addingTimeInterval(10)))

        // The second read it less than a second ago: it does not read again yet.
        #expect(await second.adoptRecovery(endpoint, now: t0.addingTimeInterval(1.5)) == false)
        #expect(second.downSince(endpoint) == t0)

        // A call the second sent before that return and that failed after it (it hung) is not a
        // sign of the outage: it should go again at once, though the last read said "down" (a
        // stale "down" is read afresh). One sent after the return is a sign.
        #expect(await second.recovered(endpoint, after: t0.addingTimeInterval(5), now: t0.addingTimeInterval(1.8)))
        #expect(await second.recovered(endpoint, after: t0.addingTimeInterval(10.5), now: t0.addingTimeInterval(10.6)) == false)
        #expect(await first.recovered(endpoint, after: t0.addingTimeInterval(5), now: t0.addingTimeInterval(10.6)))
        #expect(await second.adoptRecovery(endpoint, now: t0.addingTimeInterval(11)) == true)
        #expect(second.downSince(endpoint) == nil)
        if case .call = second.admit(endpoint, now: t0.addingTimeInterval(11)) {} else { Issue.record("healthy again: calls go") }

        // Down again later: the old recovery is not this outage's end.
        await down(second, at: t0.addingTimeInterval(20))
        #expect(await second.adoptRecovery(endpoint, now: t0.addingTimeInterval(30)) == false)
        #expect(second.downSince(endpoint) == t0.addingTimeInterval(20))
        // A process that is not down has nothing to adopt.
        #expect(await first.adoptRecovery(endpoint, now: t0.addingTimeInterval(30)) == false)

        // Each app's backend heard of each outage once, though two processes saw the first.
        for app in ["app", "other"] {
            let events = try await store.events(appId: app, after: 0, types: [.appleDown, .appleRecovered], limit: 10).map(\.event)
            #expect(events.map(\.type) == [.appleDown, .appleRecovered, .appleDown], "\(app): \(events.map(\.type))")
            #expect(events.map(\.occurredAt) == [t0, t0.addingTimeInterval(10), t0.addingTimeInterval(20)])
            #expect(events[1].details?.downSince == t0 && events.allSatisfy { $0.details?.appleEndpoint == "verify_receipt_production" })
        }
    }

    @Test("recovery releases the waiting verifications oldest first at the configured rate", arguments: StoreFactory.all)
    func releaseRate(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let t0 = referenceTime
        var jobIds: [String] = []
        for i in 0..<3 {
            let submission = EvidenceSubmission(
                appId: "app", appUserId: "u\(i)", evidenceHash: "rate-\(i)", evidence: .receipt(base64: "cmF0ZS\(i)=="), refresh: false)
            jobIds.append(try await SubmitEvidence(store: store)(submission, now: t0.addingTimeInterval(Double(i))).verification.jobId)
        }
        let later = t0.addingTimeInterval(5)
        for lease in try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "w", now: later, leaseDuration: 30) {
            #expect(try await store.retryJob(lease, at: later.addingTimeInterval(3_600), reason: "apple_down", now: later))
        }
        let health = monitor(store)
        await down(health, at: later)
        await health.record(endpoint, answered: true, probe: true, now: later)
        // 50 a second: 20 ms apart, oldest first.
        let due = { (at: Date) in
            try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "w2", now: at, leaseDuration: 30).map(\.jobId)
        }
        #expect(try await due(later) == [jobIds[0]])
        #expect(try await due(later.addingTimeInterval(0.02)) == [jobIds[1]])
        #expect(try await due(later.addingTimeInterval(0.04)) == [jobIds[2]])
    }

    @Test(
        "only a return from down releases work, and only the work waiting for that API; a return from degraded releases nothing",
        arguments: StoreFactory.all)
    func releaseScope(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let t0 = referenceTime
        let submission = EvidenceSubmission(
            appId: "app", appUserId: "u", evidenceHash: "scope", evidence: .receipt(base64: "c2NvcGU="), refresh: false)
        let jobId = try await SubmitEvidence(store: store)(submission, now: t0).verification.jobId
        let backoff = t0.addingTimeInterval(3_600)
        for lease in try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "w", now: t0, leaseDuration: 30) {
            #expect(try await store.retryJob(lease, at: backoff, reason: "apple_unreachable", now: t0))
        }
        let due = { (at: Date) in
            try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "w2", now: at, leaseDuration: 30).map(\.jobId)
        }
        let health = monitor(store)  // releases verifyReceipt's work only (the default)

        // The Server API goes down and comes back: the receipt waits on verifyReceipt, it stays.
        let serverAPI = AppleHealthMonitor.Endpoint.serverAPI("production")
        for _ in 0..<policy.downAfterFailures { await health.record(serverAPI, answered: false, probe: false, now: t0) }
        await health.record(serverAPI, answered: true, probe: true, now: t0.addingTimeInterval(1))
        // verifyReceipt degraded (one failure) and answering again: nothing waited.
        await health.record(endpoint, answered: false, probe: false, now: t0.addingTimeInterval(2))
        #expect(health.snapshot().first { $0.0 == endpoint }?.1.state == .degraded)
        await health.record(endpoint, answered: true, probe: false, now: t0.addingTimeInterval(3))
        #expect(try await due(t0.addingTimeInterval(4)).isEmpty, "still on its own backoff")

        // verifyReceipt down, then back: released.
        await down(health, at: t0.addingTimeInterval(5))
        await health.record(endpoint, answered: true, probe: true, now: t0.addingTimeInterval(6))
        #expect(try await due(t0.addingTimeInterval(6)) == [jobId])
    }

    @Test("the sandbox's outages are told only to the apps that accept the sandbox", arguments: StoreFactory.all)
    func sandboxEvents(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let health = AppleHealthMonitor(
            policy: policy, store: store, metrics: MetricsRegistry(), logger: Logger(label: "test"),
            appIds: ["app", "production_only"], sandboxAppIds: ["app"])
        let sandbox = AppleHealthMonitor.Endpoint.verifyReceipt("sandbox")
        for _ in 0..<policy.downAfterFailures { await health.record(sandbox, answered: false, probe: false, now: referenceTime) }
        await health.record(sandbox, answered: true, probe: true, now: referenceTime.addingTimeInterval(5))
        let told = { (app: String) in
            try await store.events(appId: app, after: 0, types: [.appleDown, .appleRecovered], limit: 10).map(\.event.type)
        }
        #expect(try await told("app") == [.appleDown, .appleRecovered])
        #expect(try await told("production_only").isEmpty)
    }

    @Test("a failed call waits its own backoff, a probe step at most while Apple is down, nothing once Apple came back")
    func delayAfterFailure() async throws {
        let store = try await StoreFactory.sqlite.make()
        let health = monitor(store)
        let t0 = referenceTime
        let backoff: TimeInterval = 600
        // Healthy: the job's own schedule.
        #expect(await health.delayAfterFailure(endpoint, sentAt: t0, scheduled: backoff, now: t0, unitRandom: 0.5) == backoff)
        // Down: back round the probe, spread over the probe step, never later than its schedule.
        await down(health, at: t0)
        let spread = await health.delayAfterFailure(endpoint, sentAt: t0, scheduled: backoff, now: t0.addingTimeInterval(1), unitRandom: 0.5)
        #expect(spread == policy.probeCapSeconds / 2)
        #expect(await health.delayAfterFailure(endpoint, sentAt: t0, scheduled: 1, now: t0.addingTimeInterval(1), unitRandom: 0.9) == 1)
        // Apple answered at t0+10: a call sent before then goes at once; one sent after waits.
        await health.record(endpoint, answered: true, probe: true, now: t0.addingTimeInterval(10))
        #expect(
            await health.delayAfterFailure(
                endpoint, sentAt: t0.addingTimeInterval(9), scheduled: backoff, now: t0.addingTimeInterval(11), unitRandom: 0.5) == 0)
        #expect(
            await health.delayAfterFailure(
                endpoint, sentAt: t0.addingTimeInterval(10.5), scheduled: backoff, now: t0.addingTimeInterval(11), unitRandom: 0.5)
                == backoff)
    }

    @Test(
        "a recovery and a new outage within one millisecond (a frozen clock) are one instant: the database's rounded copy is no later recovery"
    )
    func sameMillisecond() async throws {
        let store = try await StoreFactory.sqlite.make()
        let health = monitor(store)
        // 0.7 ms past a whole millisecond: the shared row keeps it rounded up, 0.3 ms later.
        let t = referenceTime.addingTimeInterval(0.000_7)
        await down(health, at: t)
        await health.record(endpoint, answered: true, probe: true, now: t)
        #expect(health.downSince(endpoint) == nil)
        // A call sent at t fails at t: it did not outlive the recovery (which came at t, not
        // after), so it is a sign of a new outage. Asking reads the shared row and keeps it.
        #expect(await health.recovered(endpoint, after: t, now: t) == false)
        await down(health, at: t)
        // Nobody saw Apple answer after this outage began: no adoption, no call sent at t
        // counted as outlived by a recovery, so the failed job waits its probe step.
        #expect(await health.adoptRecovery(endpoint, now: t) == false)
        #expect(await health.recovered(endpoint, after: t, now: t) == false)
        #expect(await health.delayAfterFailure(endpoint, sentAt: t, scheduled: 600, now: t, unitRandom: 0.5) == policy.probeCapSeconds / 2)
    }
}
