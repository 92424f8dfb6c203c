import JobQueue
import Logging
import PostgresNIO
import ServiceLifecycle

/// Wakes this process's job runner when any process enqueues a job (`LISTEN` on the store's
/// channel), so an idle worker starts a new job within milliseconds instead of at its next poll.
/// Notifications are hints: a lost one costs at most one poll interval, never a job.
public struct PostgresJobListener: Service {
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
            while !Task.isCancelled {
                do {
                    try await store.client.withConnection { connection in
                        try await connection.listen(on: store.jobChannel) { notifications in
                            // Jobs may have arrived while no one listened.
                            signal.wake()
                            for try await _ in notifications { signal.wake() }
                        }
                    }
                } catch {
                    if Task.isCancelled { return }
                    logger.warning("job notifications interrupted; listening again", metadata: ["error": "\(error)"])
                }
                // Until it listens again, the runner's own poll interval covers the gap.
                try? await Task.sleep(for: .milliseconds(500))
            }
        }
    }
}
