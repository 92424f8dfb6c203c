public import JobQueue
public import Logging
import Persistence
import PostgresNIO
public import ServiceLifecycle
import Synchronization

/// Relays what other processes commit (`LISTEN` on the store's channels): new jobs wake this
/// process's job runner, so an idle worker starts within milliseconds instead of at its next
/// poll; changed verifications wake this process's `?wait=` answers. Notifications are hints: a
/// lost one costs at most one poll interval or one re-read, never a job or an answer.
public struct PostgresJobListener: Service, CustomStringConvertible {
    /// ServiceLifecycle logs every service: its name only, never the configuration and keys it holds.
    public var description: String { "PostgresJobListener" }

    let store: PostgresStore
    /// Woken on new jobs; nil in a process that runs no jobs.
    let signal: WakeSignal?
    /// Told of changed verifications; false in a process that answers no HTTP.
    let relaysVerifications: Bool
    let logger: Logger

    public init(store: PostgresStore, signal: WakeSignal?, relaysVerifications: Bool, logger: Logger) {
        self.store = store
        self.signal = signal
        self.relaysVerifications = relaysVerifications
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                if let signal {
                    group.addTask {
                        let own = store.announcerId
                        await listen(on: store.jobChannel, name: "job") { payload in
                            // This store's own commits woke its runners already.
                            if payload != own { signal.wake() }
                        } reconnected: {
                            signal.wake()
                        }
                    }
                }
                if relaysVerifications {
                    let watch = store.verificationWatch
                    group.addTask {
                        await listen(on: store.verificationChannel, name: "verification") { id in
                            watch.notify(id)
                        } reconnected: {
                            watch.notifyAll()
                        }
                    }
                }
            }
        }
    }

    /// Listens until cancelled. One warning when listening stops working and one notice when it
    /// works again, however long the database stays away; retries back off up to 30 s.
    private func listen(
        on channel: String, name: String, _ received: @escaping @Sendable (String) -> Void, reconnected: @escaping @Sendable () -> Void
    ) async {
        let backoff = Mutex(FailureBackoff(base: 0.5, cap: 30))
        while !Task.isCancelled {
            do {
                try await store.workClient.withConnection { connection in
                    try await connection.listen(on: channel) { notifications in
                        if backoff.withLock({ $0.succeeded() }) > 0 { logger.notice("\(name) notifications listening again") }
                        // Something may have happened while no one listened.
                        reconnected()
                        for try await notification in notifications { received(notification.payload) }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                let (delay, starts) = backoff.withLock { $0.failed() }
                if starts {
                    logger.warning("\(name) notifications interrupted; listening again with backoff", metadata: ["error": "\(error)"])
                }
                // Until it listens again, polls and re-reads cover the gap.
                try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
                continue
            }
            try? await Task.sleep(for: .milliseconds(500))
        }
    }
}
