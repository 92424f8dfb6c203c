import Foundation
import Logging
import ServiceLifecycle
import Synchronization

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
        public var owner: String = "runner-\(UUID().uuidString.prefix(8))"

        public init() {}
    }

    private let store: any JobStore
    private let handlers: [String: any JobHandler]
    private let configuration: Configuration
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let signal: WakeSignal
    private let inFlight = Mutex(0)

    public init(
        store: any JobStore, handlers: [any JobHandler], configuration: Configuration, signal: WakeSignal = WakeSignal(),
        logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.handlers = Dictionary(uniqueKeysWithValues: handlers.map { ($0.kind, $0) })
        self.configuration = configuration
        self.signal = signal
        self.logger = logger
        self.now = now
    }

    /// Jobs being run right now by this runner.
    public var runningCount: Int { inFlight.withLock { $0 } }

    public func run() async throws {
        let stopping = Mutex(false)
        try await withGracefulShutdownHandler {
            try await withThrowingDiscardingTaskGroup { group in
                while !stopping.withLock({ $0 }) && !Task.isCancelled {
                    let capacity = configuration.concurrency - runningCount
                    var leased: [JobLease] = []
                    if capacity > 0 {
                        do {
                            leased = try await store.leaseJobs(
                                kinds: Array(handlers.keys), limit: min(capacity, configuration.batchSize),
                                owner: configuration.owner, now: now(), leaseDuration: configuration.leaseDuration)
                        } catch {
                            logger.error("leasing jobs failed", metadata: ["error": "\(error)"])
                        }
                    }
                    for lease in leased {
                        inFlight.withLock { $0 += 1 }
                        group.addTask {
                            await self.execute(lease)
                            self.inFlight.withLock { $0 -= 1 }
                            self.signal.wake()
                        }
                    }
                    if leased.count == min(capacity, configuration.batchSize), capacity > 0 { continue }
                    await signal.wait(timeout: await sleepInterval())
                }
                // Graceful shutdown: lease nothing new; jobs in flight finish (or their leases expire).
            }
        } onGracefulShutdown: {
            stopping.withLock { $0 = true }
            self.signal.wake()
        }
    }

    private func sleepInterval() async -> TimeInterval {
        guard let due = try? await store.nextJobDue() else { return configuration.pollInterval }
        return min(configuration.pollInterval, max(0.005, due.timeIntervalSince(now())))
    }

    private func execute(_ lease: JobLease) async {
        guard let handler = handlers[lease.kind] else {
            _ = try? await store.discardJob(lease, reason: "no handler for kind \(lease.kind)", now: now())
            return
        }
        let outcome = await handler.run(lease)
        do {
            switch outcome {
            case .completed: _ = try await store.completeJob(lease, now: now())
            case .retry(let at, let reason): _ = try await store.retryJob(lease, at: at, reason: reason, now: now())
            case .discard(let reason): _ = try await store.discardJob(lease, reason: reason, now: now())
            case .finishedByHandler: break
            }
        } catch {
            // The lease expires and another attempt runs: at least once, never lost.
            logger.error("recording job outcome failed", metadata: ["job": "\(lease.jobId)", "error": "\(error)"])
        }
    }
}
