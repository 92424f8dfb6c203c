import JobQueue
import Synchronization

/// Whether the transaction (or lone statement) running in this task queued a job or made one due.
/// The statements that do call `note()`; `PostgresStore.transaction` and `.statement` read it after
/// the commit and announce the work once, to this process's runners at once and to the others
/// through `CommitAnnouncer`. A task-local because those statements live in helpers shared by many
/// transactions (an event's webhook deliveries, a verification's job), which cannot know whether
/// they run inside the outermost one.
final class QueuedJobs: Sendable {
    @TaskLocal static var current: QueuedJobs?

    private let noted = Atomic<Bool>(false)

    /// Right after a statement that inserts a job or moves a job's run time. An attempt that rolls
    /// back after noting costs one spurious wake, never a missed one.
    static func note() { current?.noted.store(true, ordering: .relaxed) }

    var any: Bool { noted.load(ordering: .relaxed) }
}

extension PostgresStore {
    /// Runs `body` (one transaction, or one statement that commits on its own) and announces the
    /// jobs it queued after it returned.
    func announcingQueuedJobs<T>(_ body: () async throws -> T) async throws -> T {
        let queued = QueuedJobs()
        let result = try await QueuedJobs.$current.withValue(queued) { try await body() }
        if queued.any {
            self.queued.wake()
            jobAnnouncer.committed([announcerId])
        }
        return result
    }
}
