import GRDB
import JobQueue

/// Wakes the store's `queued` signal after each commit that inserted a job or moved a job's run
/// time (a retry made due now, a requeue, a released wait), so the runners of this process start
/// it at once. It is the only announcement of new work: no caller of the port has to remember one,
/// and a write that rolls back announces nothing.
///
/// GRDB calls it on the writer's queue only, one transaction at a time, so `changed` needs no lock.
final class QueuedJobsObserver: TransactionObserver, @unchecked Sendable {
    private let signal: WakeSignal
    private var changed = false

    init(signal: WakeSignal) { self.signal = signal }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        switch eventKind {
        case .insert(let table): table == "jobs"
        case .update(let table, let columns): table == "jobs" && columns.contains("run_at")
        case .delete: false
        }
    }

    func databaseDidChange(with event: DatabaseEvent) {
        changed = true
        stopObservingDatabaseChangesUntilNextTransaction()
    }

    func databaseDidCommit(_ db: Database) {
        guard changed else { return }
        changed = false
        signal.wake()
    }

    func databaseDidRollback(_ db: Database) { changed = false }
}
