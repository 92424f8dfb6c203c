public import Foundation
public import Logging
public import ServiceLifecycle
import Synchronization
import Tracing

/// Leases due jobs and runs them with bounded concurrency. One dispatcher loop leases in
/// batches as capacity frees up, so a thousand in-flight Apple calls cost a handful of
/// database writes per second, not a thousand polling loops.
public final class JobRunner: Service, Sendable {
    public struct Configuration: Sendable {
        /// Jobs running at once in this process. Apple takes seconds per call, so this is large.
        public var concurrency: Int = 64
        /// How long a lease lasts; a job whose holder died is leased again after this.
        public var leaseDuration: TimeInterval = 60
        /// Longest sleep between checks when no wake arrives.
        public var pollInterval: TimeInterval = 1
        /// Most jobs leased in one statement.
        public var batchSize: Int = 32
        /// Name written on leases, for operators.
        /// Carries this process's identity, so that a restarted process can release the leases of
        /// its dead predecessor at once instead of waiting for them to expire.
        public var owner: String = ProcessIdentity.current.owner()
        /// On graceful shutdown, how long jobs in flight may finish; the rest are released
        /// (not counted as an attempt) and cancelled, so the process stops within a known bound.
        public var shutdownGrace: TimeInterval = 10
        /// Waits between tries while the store fails.
        public var storeBackoff = FailureBackoff()
        /// Waits between tries to write a job's outcome the store refused, until the lease ends.
        public var outcomeBackoff = FailureBackoff(base: 0.25, cap: 4)

        public init() {}
    }

    private let store: any JobStore
    private let handlers: [String: any JobHandler]
    private let configuration: Configuration
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let signal: WakeSignal
    /// Told after each pass whether it found nothing to do (tests wait on it; nil in production).
    private let idle: IdleSignal?
    private let inFlight = Mutex<[String: JobLease]>([:])
    private let storeState: Mutex<FailureBackoff>

    public init(
        store: any JobStore, handlers: [any JobHandler], configuration: Configuration, signal: WakeSignal = WakeSignal(),
        idle: IdleSignal? = nil, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.idle = idle
        self.store = store
        self.handlers = Dictionary(uniqueKeysWithValues: handlers.map { ($0.kind, $0) })
        self.configuration = configuration
        self.signal = signal
        self.logger = logger
        self.now = now
        self.storeState = Mutex(configuration.storeBackoff)
    }

    /// Jobs being run right now by this runner.
    public var runningCount: Int { inFlight.withLock { $0.count } }

    /// True while the store refuses this runner's reads or writes (reported by `/healthz`).
    public var storeIsFailing: Bool { storeState.withLock { $0.isFailing } }

    public func run() async throws {
        let stopping = Mutex(false)
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                while !stopping.withLock({ $0 }) && !Task.isCancelled {
                    let pass = idle?.passBegins()
                    let capacity = configuration.concurrency - runningCount
                    var leased: [JobLease] = []
                    if capacity > 0 {
                        do {
                            leased = try await store.leaseJobs(
                                kinds: Array(handlers.keys), limit: min(capacity, configuration.batchSize),
                                owner: configuration.owner, now: now(), leaseDuration: configuration.leaseDuration)
                            storeRecovered()
                        } catch {
                            if let pass { idle?.pass(pass, wasIdle: false) }
                            await signal.wait(timeout: storeFailed(error, doing: "leasing jobs"))
                            continue
                        }
                    }
                    inFlight.withLock { running in for lease in leased { running[lease.token + lease.jobId] = lease } }
                    if let pass { idle?.pass(pass, wasIdle: capacity > 0 && leased.isEmpty && runningCount == 0) }
                    var batches: [String: [JobLease]] = [:]
                    for lease in leased {
                        if handlers[lease.kind] is any BatchJobHandler {
                            batches[lease.kind, default: []].append(lease)
                            continue
                        }
                        group.addTask {
                            await self.execute(lease)
                            self.finished(lease)
                        }
                    }
                    for (kind, leases) in batches {
                        guard let handler = handlers[kind] as? any BatchJobHandler else { continue }
                        group.addTask {
                            await withSpan("job \(kind)", ofKind: .consumer) { span in
                                span.attributes["storekeeper.job.kind"] = kind
                                span.attributes["storekeeper.job.count"] = leases.count
                                await handler.run(batch: leases) { lease, outcome in
                                    await self.record(outcome, of: lease)
                                    self.finished(lease)
                                }
                            }
                        }
                    }
                    if leased.count == min(capacity, configuration.batchSize), capacity > 0 { continue }
                    await signal.wait(timeout: await sleepInterval())
                }
                // Graceful shutdown: lease nothing new; jobs in flight get the grace, then go back.
                await drain(group: &group)
            }
        } onGracefulShutdown: {
            stopping.withLock { $0 = true }
            self.signal.wake()
        }
    }

    /// Waits up to `shutdownGrace` for jobs in flight, then releases the leases of those still
    /// running (their attempt not counted) and cancels them. A handler that finishes after its
    /// release writes nothing: every write it makes names the lease it no longer holds.
    private func drain(group: inout ThrowingDiscardingTaskGroup<any Error>) async {
        let deadline = ContinuousClock.now + .milliseconds(Int64(configuration.shutdownGrace * 1000))
        while runningCount > 0, ContinuousClock.now < deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            await signal.wait(timeout: min(0.5, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18))
        }
        let unfinished = inFlight.withLock { Array($0.values) }
        guard !unfinished.isEmpty else { return }
        var released = 0
        for lease in unfinished where (try? await release(lease)) == true { released += 1 }
        logger.notice(
            "shutdown grace over: jobs in flight returned to the queue",
            metadata: ["released": "\(released)", "inFlight": "\(unfinished.count)"])
        group.cancelAll()
    }

    /// Through the kind's handler when its jobs stand for state of their own, else the store.
    private func release(_ lease: JobLease) async throws -> Bool {
        if let handler = handlers[lease.kind] as? any ReleasingJobHandler { return try await handler.release(lease, now: now()) }
        return try await store.releaseJob(lease, now: now())
    }

    /// Logs the first failure of a run only; returns how long to wait before the next try.
    private func storeFailed(_ error: any Error, doing what: String) -> TimeInterval {
        let (delay, starts) = storeState.withLock { $0.failed() }
        if starts {
            logger.error("storage failing: \(what); retrying with backoff, logged again when it recovers", metadata: ["error": "\(error)"])
        }
        return delay
    }

    private func storeRecovered() {
        let ended = storeState.withLock { $0.succeeded() }
        if ended > 0 { logger.notice("storage recovered", metadata: ["failedAttempts": "\(ended)"]) }
    }

    private func sleepInterval() async -> TimeInterval {
        do {
            guard let due = try await store.nextJobDue() else { return configuration.pollInterval }
            return min(configuration.pollInterval, max(0.005, due.timeIntervalSince(now())))
        } catch {
            return storeFailed(error, doing: "reading the next due job")
        }
    }

    private func execute(_ lease: JobLease) async {
        guard let handler = handlers[lease.kind] else {
            _ = try? await store.discardJob(lease, reason: "no handler for kind \(lease.kind)", now: now())
            return
        }
        // One span per attempt; its subject (a verification's or a delivery's id) ties it to the
        // request that queued the job, which ran in another trace.
        await withSpan("job \(lease.kind)", ofKind: .consumer) { span in
            span.attributes["storekeeper.job.id"] = lease.jobId
            span.attributes["storekeeper.job.kind"] = lease.kind
            span.attributes["storekeeper.job.subject"] = lease.payload
            span.attributes["storekeeper.job.attempt"] = lease.attempt
            let outcome = await handler.run(lease)
            switch outcome {
            case .completed, .finishedByHandler: break
            case .retry(_, let reason): span.attributes["storekeeper.job.retry_reason"] = reason
            case .discard(let reason): span.setStatus(SpanStatus(code: .error, message: reason))
            }
            await record(outcome, of: lease)
        }
    }

    private func finished(_ lease: JobLease) {
        inFlight.withLock { _ = $0.removeValue(forKey: lease.token + lease.jobId) }
        signal.wake()
    }

    /// Writes a job's outcome. While the database refuses, tries again (`outcomeBackoff`) until
    /// the lease expires: a database back within the lease does not leave the job waiting out its
    /// lease, and a write after it names a lease nobody holds and changes nothing. What was not
    /// written is run again once the lease expires: at least once, never lost.
    private func record(_ outcome: JobOutcome, of lease: JobLease) async {
        var backoff = configuration.outcomeBackoff
        // The lease's time left, counted on this machine's clock from here (the injected `now`
        // may stand still).
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, lease.expiresAt.timeIntervalSince(now())) * 1000))
        while true {
            do {
                switch outcome {
                case .completed: _ = try await store.completeJob(lease, now: now())
                case .retry(let at, let reason): _ = try await store.retryJob(lease, at: at, reason: reason, now: now())
                case .discard(let reason): _ = try await store.discardJob(lease, reason: reason, now: now())
                case .finishedByHandler: break
                }
                if backoff.isFailing {
                    logger.notice("job outcome recorded", metadata: ["job": "\(lease.jobId)", "failedAttempts": "\(backoff.succeeded())"])
                }
                return
            } catch {
                let (delay, first) = backoff.failed()
                if first {
                    logger.error(
                        "recording job outcome failed; trying again until the lease expires",
                        metadata: ["job": "\(lease.jobId)", "error": "\(error)"])
                }
                guard ContinuousClock.now + .seconds(delay) < deadline, (try? await Task.sleep(for: .seconds(delay))) != nil else { return }
            }
        }
    }
}
