import JobQueue
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Wakes this process's job runner when any process enqueues a job (`LISTEN` on the store's
/// channel), so an idle worker starts a new job within milliseconds instead of at its next poll.
/// Notifications are hints: a lost one costs at most one poll interval, never a job.
public struct PostgresJobListener: Service, CustomStringConvertible {
    /// ServiceLifecycle logs every service: its name only, never the configuration and keys it holds.
    public var description: String { "PostgresJobListener" }

    let store: PostgresStore
    let signal: WakeSignal
    let logger: Logger

    public init(store: PostgresStore, signal: WakeSignal, logger: Logger) {
        self.store = store
        self.signal = signal
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            // One warning when listening stops working and one notice when it works again, however
            // long the database stays away; retries back off up to 30 s.
            let backoff = Mutex(FailureBackoff(base: 0.5, cap: 30))
            while !Task.isCancelled {
                do {
                    try await store.client.withConnection { connection in
                        try await connection.listen(on: store.jobChannel) { notifications in
                            if backoff.withLock({ $0.succeeded() }) > 0 { logger.notice("job notifications listening again") }
                            // Jobs may have arrived while no one listened.
                            signal.wake()
                            for try await _ in notifications { signal.wake() }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    let (delay, starts) = backoff.withLock { $0.failed() }
                    if starts {
                        logger.warning("job notifications interrupted; listening again with backoff", metadata: ["error": "\(error)"])
                    }
                    // Until it listens again, the runner's own poll interval covers the gap.
                    try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
                    continue
                }
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}
