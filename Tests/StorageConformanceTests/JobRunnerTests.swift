import AppStoreSimulator
import Foundation
import JobQueue
import Logging
import Persistence
import ServiceLifecycle
import StorageSQLite
import StorekeeperCore
import StorekeeperTesting
import Synchronization
import Testing

/// A handler whose jobs overlap as much as the runner lets them, whatever the machine's speed:
/// each waits until `limit` jobs run at once (or every job has started), so the peak it counts
/// is exactly the runner's bound unless the runner exceeds it. `allFinished` opens after the last.
final class OverlappingHandler: JobHandler {
    let kind = "verify_receipt"
    let total: Int
    let limit: Int
    let started = Mutex(0)
    let peak = Mutex(0)
    let allFinished = OneShotSignal()
    private let state = Mutex<(running: Int, finished: Int, gate: OneShotSignal)>((0, 0, OneShotSignal()))

    init(total: Int, limit: Int) {
        self.total = total
        self.limit = limit
    }

    func run(_ lease: JobLease) async -> JobOutcome {
        let begun = started.withLock {
            $0 += 1
            return $0
        }
        let (gate, running) = state.withLock { state -> (OneShotSignal, Int) in
            state.running += 1
            return (state.gate, state.running)
        }
        peak.withLock { $0 = max($0, running) }
        if running >= limit || begun == total {
            // Everyone waiting goes; later jobs wait on a new gate.
            state.withLock { $0.gate = OneShotSignal() }
            gate.open()
        } else {
            await gate.wait()
        }
        let finished = state.withLock { state -> Int in
            state.running -= 1
            state.finished += 1
            return state.finished
        }
        if finished == total { allFinished.open() }
        return .completed
    }
}

/// A handler whose jobs stay in flight until graceful shutdown is triggered, then complete. Which
/// jobs are in flight at shutdown is then fixed, however fast or slow the machine is: none can
/// finish (and free a slot for another) before the shutdown.
final class HeldUntilShutdownHandler: JobHandler {
    let kind = "verify_receipt"
    let started = Mutex(0)
    let finished = Mutex(0)
    /// Open once four jobs have started (the runner's concurrency).
    let fourStarted = OneShotSignal()

    func run(_ lease: JobLease) async -> JobOutcome {
        if started.withLock({
            $0 += 1; return $0
        }) == 4 {
            fourStarted.open()
        }
        // The job runs inside the runner's service, so it sees the group's graceful shutdown. The
        // runner registered its own handler (stop leasing) first, and shutdown handlers run in
        // order, so the runner has stopped leasing before this returns.
        try? await ServiceLifecycle.gracefulShutdown()
        finished.withLock { $0 += 1 }
        return .completed
    }
}

/// Runs leases in batches; holds the first job it ever sees until `release` is opened, and ends
/// every other one at once.
final class HoldingBatchHandler: BatchJobHandler {
    let kind = "verify_receipt"
    let batchSizes = Mutex<[Int]>([])
    let finished = Mutex(0)
    let held = Mutex<String?>(nil)
    let release = OneShotSignal()
    /// Open once 11 jobs (every one but the held one) have ended, and once all 12 have.
    let elevenFinished = OneShotSignal()
    let allFinished = OneShotSignal()

    func run(_ lease: JobLease) async -> JobOutcome {
        Issue.record("a batch handler's leases go through run(batch:)")
        return .completed
    }

    func run(batch leases: [JobLease], done: @escaping @Sendable (JobLease, JobOutcome) async -> Void) async {
        batchSizes.withLock { $0.append(leases.count) }
        await withDiscardingTaskGroup { group in
            for lease in leases {
                group.addTask {
                    let holds = self.held.withLock { held in
                        guard held == nil else { return false }
                        held = lease.jobId
                        return true
                    }
                    if holds { await self.release.wait() }
                    await done(lease, .completed)
                    let finished = self.finished.withLock {
                        $0 += 1
                        return $0
                    }
                    if finished == 11 { self.elevenFinished.open() }
                    if finished == 12 { self.allFinished.open() }
                }
            }
        }
    }
}

/// A job store that refuses the first `failures` outcome writes (a database away for a moment)
/// and passes everything else to `base`; `recorded` opens once an outcome is written.
final class OutcomeRefusingStore: JobStore {
    let base: any JobStore
    let attempts = Mutex(0)
    let recorded = OneShotSignal()
    private let failures: Int

    init(_ base: any JobStore, failures: Int) {
        self.base = base
        self.failures = failures
    }

    struct Refused: Error {}

    var queued: WakeSignal { base.queued }

    func endAttempt(_ lease: JobLease, _ transition: JobLifecycle.Transition, now: Date) async throws -> Bool {
        let attempt = attempts.withLock {
            $0 += 1
            return $0
        }
        guard attempt > failures else { throw Refused() }
        let written = try await base.endAttempt(lease, transition, now: now)
        recorded.open()
        return written
    }

    func leaseJobs(kinds: [String], limit: Int, owner: String, now: Date, leaseDuration: TimeInterval) async throws -> [JobLease] {
        try await base.leaseJobs(kinds: kinds, limit: limit, owner: owner, now: now, leaseDuration: leaseDuration)
    }
    func releaseJob(_ lease: JobLease, now: Date) async throws -> Bool { try await base.releaseJob(lease, now: now) }
    func leaseOwners() async throws -> [String] { try await base.leaseOwners() }
    func releaseLeases(owner: String, now: Date) async throws -> Int { try await base.releaseLeases(owner: owner, now: now) }
    func releaseWaitingJobs(kinds: [String], now: Date, perSecond: Double?) async throws -> Int {
        try await base.releaseWaitingJobs(kinds: kinds, now: now, perSecond: perSecond)
    }
    func nextJobDue() async throws -> Date? { try await base.nextJobDue() }
    func jobCounts() async throws -> [JobState: Int] { try await base.jobCounts() }
}

@Suite("job runner service")
struct JobRunnerTests {
    func store(jobs: Int, factory: StoreFactory) async throws -> any StorekeeperStore {
        let store = try await factory.make()
        for i in 0..<jobs {
            _ = try await SubmitEvidence(store: store)(
                EvidenceSubmission(appId: "app", appUserId: "u\(i)", evidenceHash: "h\(i)", evidence: .receipt(base64: "aA==")),
                now: Date())
        }
        return store
    }

    /// Runs `runner` as a service, calls `body` while it runs, then shuts it down gracefully and
    /// waits until it has stopped.
    func whileRunning(_ runner: JobRunner, _ body: () async throws -> Void) async throws {
        let group = ServiceGroup(services: [runner], gracefulShutdownSignals: [], cancellationSignals: [], logger: Logger(label: "test"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await body()
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("graceful shutdown: jobs in flight finish and are recorded, nothing new is leased", arguments: StoreFactory.all)
    func gracefulShutdown(factory: StoreFactory) async throws {
        let store = try await store(jobs: 10, factory: factory)
        let handler = HeldUntilShutdownHandler()
        var configuration = JobRunner.Configuration()
        configuration.concurrency = 4
        configuration.batchSize = 4
        // The jobs finish right after the shutdown starts; the grace only bounds a loaded machine.
        configuration.shutdownGrace = 600
        let runner = JobRunner(store: store, handlers: [handler], configuration: configuration, logger: Logger(label: "test"))
        try await whileRunning(runner) {
            try await withTestWait("four jobs in flight") { await handler.fourStarted.wait() }
        }
        #expect(handler.started.withLock { $0 } == 4)
        #expect(handler.finished.withLock { $0 } == 4)
        let counts = try await store.jobCounts()
        #expect(counts[.completed] == 4 && counts[.available] == 6 && counts[.running] == nil)
    }

    @Test("concurrency is bounded and every job runs once", arguments: StoreFactory.all)
    func bounded(factory: StoreFactory) async throws {
        let store = try await store(jobs: 30, factory: factory)
        let handler = OverlappingHandler(total: 30, limit: 5)
        var configuration = JobRunner.Configuration()
        configuration.concurrency = 5
        let runner = JobRunner(store: store, handlers: [handler], configuration: configuration, logger: Logger(label: "test"))
        try await whileRunning(runner) { await handler.allFinished.wait() }
        #expect(handler.peak.withLock { $0 } == 5, "the jobs overlap up to the bound, never beyond it")
        #expect(handler.started.withLock { $0 } == 30)
        #expect(try await store.jobCounts()[.completed] == 30)
    }

    @Test(
        "a batch handler gets the leases leased together; each frees its slot when it ends, not when its batch's slowest does",
        arguments: StoreFactory.all)
    func batches(factory: StoreFactory) async throws {
        let store = try await store(jobs: 12, factory: factory)
        let handler = HoldingBatchHandler()
        var configuration = JobRunner.Configuration()
        configuration.concurrency = 4
        let runner = JobRunner(store: store, handlers: [handler], configuration: configuration, logger: Logger(label: "test"))
        try await whileRunning(runner) {
            // With slots held until a batch ends, the held job's batch would keep all 4 and the
            // other 8 jobs would never run.
            await handler.elevenFinished.wait()
            #expect(handler.finished.withLock { $0 } == 11, "every job but the held one ended while it was held")
            handler.release.open()
            await handler.allFinished.wait()
        }
        #expect(try await store.jobCounts()[.completed] == 12)
        #expect(handler.batchSizes.withLock { $0.first } == 4, "the first lease took 4 jobs, run as one batch: \(handler.batchSizes.withLock { $0 })")
    }

    @Test(
        "an outcome the store refuses is written again within the lease: recorded once, the job run once, no lease waited out",
        arguments: StoreFactory.all)
    func outcomeRetried(factory: StoreFactory) async throws {
        let base = try await store(jobs: 1, factory: factory)
        let store = OutcomeRefusingStore(base, failures: 3)
        let handler = OverlappingHandler(total: 1, limit: 1)
        var configuration = JobRunner.Configuration()
        // Longer than the test's own wait: a runner that gave up on the outcome would leave the
        // job leased past it, and the wait below would fail.
        configuration.leaseDuration = TestWait.seconds * 6
        configuration.outcomeBackoff = FailureBackoff(base: 0.001, cap: 0.01)
        let runner = JobRunner(store: store, handlers: [handler], configuration: configuration, logger: Logger(label: "test"))
        try await whileRunning(runner) {
            try await withTestWait("the outcome written") { await store.recorded.wait() }
        }
        #expect(store.attempts.withLock { $0 } == 4, "three refusals, then the write")
        #expect(handler.started.withLock { $0 } == 1)
        let counts = try await base.jobCounts()
        #expect(counts[.completed] == 1 && counts[.running] == nil && counts[.available] == nil)
    }
}

@Suite("wake signal")
struct WakeSignalTests {
    @Test("a wake before the wait is remembered; a cancelled wait returns at once")
    func rememberedAndCancellable() async throws {
        let signal = WakeSignal()
        signal.wake()
        // Each wait would last an hour by itself: ending within the watchdog's minute means the
        // remembered wake, or the cancellation, ended it.
        let remembered = Task { await signal.wait(timeout: 3600) }
        #expect(await ends(remembered, within: 60), "the wake made before the wait was lost")
        // Cancelled before or while it waits, a wait ends at once.
        let waiter = Task { await signal.wait(timeout: 3600) }
        waiter.cancel()
        #expect(await ends(waiter, within: 60), "a cancelled wait went on waiting")
    }
}

@Suite("simulator settings")
struct SimulatorSettingsTests {
    @Test("fault settings decode from partial JSON and refuse impossible values")
    func faults() throws {
        let latency = try JSONDecoder().decode(FaultConfiguration.self, from: Data(#"{"latencyMinMs":3000,"latencyMaxMs":6000}"#.utf8))
        #expect(latency.latencyMinMs == 3000 && latency.latencyMaxMs == 6000 && latency.http500Rate == 0)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(FaultConfiguration.self, from: Data(#"{"http500Rate":2}"#.utf8)) }
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(FaultConfiguration.self, from: Data(#"{"latencyMinMs":10,"latencyMaxMs":5}"#.utf8))
        }
        let configuration = try JSONDecoder().decode(SimulatorConfiguration.self, from: Data(#"{"port":9000}"#.utf8))
        #expect(configuration.port == 9000 && configuration.secondsPerMonth == 300 && configuration.apps.isEmpty)
        #expect(configuration.acceleratedSeconds(forPeriod: "P1Y") == 3600)
        #expect(configuration.acceleratedSeconds(forPeriod: "P1W") == 180)
    }
}
