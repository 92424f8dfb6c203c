import Foundation
import GRDB
import Synchronization

/// Runs concurrent write units together: one SQLite transaction (and, with synchronous=FULL,
/// one fsync) for a batch instead of one per unit. Each unit runs in its own savepoint, so a
/// unit that throws is rolled back alone and its caller gets the error; the others commit.
/// Every caller returns only after the transaction holding its writes has committed, so
/// "answered" always means "durable".
///
/// App requests first: units come in two queues. A batch takes every waiting request unit
/// (up to `maximumBatch`) and then at most `workBatch` units of the workers', so a purchase
/// posted while thousands of verifications are being written waits for one short batch, not
/// for the queue of them (docs/SCALING.md, "App requests first").
///
/// No task of its own: batches are chained on GRDB's writer queue (`asyncWrite`, whose
/// completion starts the next batch), so the writer goes from one batch to the next without
/// waiting for a Swift task to be scheduled. Each caller suspends on its continuation until its
/// batch has committed.
final class GroupCommitter: Sendable {
    private struct Pending: Sendable {
        /// Runs the unit inside the shared transaction; returns its error if it failed.
        var run: @Sendable (Database) -> (any Error)?
        /// Delivers the outcome once the transaction has committed (or failed as a whole).
        var finish: @Sendable ((any Error)?) -> Void
    }

    /// Whose write: an app's or operator's request, or a worker's job.
    enum Priority: Sendable {
        case request
        case work
    }

    private struct State {
        var requests: [Pending] = []
        var work: [Pending] = []
        /// A batch is being written; its completion starts the next one.
        var writing = false
    }

    private let state = Mutex(State())
    /// Most units in one transaction, so one batch never holds the writer for long.
    let maximumBatch: Int
    /// Most worker units in one transaction: how long a request can wait behind the writer.
    let workBatch: Int

    /// Told the number of units waiting after each one joins a queue (tests wait on it).
    let enqueued: (@Sendable (Int) -> Void)?

    init(maximumBatch: Int = 256, workBatch: Int = 8, enqueued: (@Sendable (Int) -> Void)? = nil) {
        self.maximumBatch = maximumBatch
        self.workBatch = min(workBatch, maximumBatch)
        self.enqueued = enqueued
    }

    func write<T: Sendable>(
        pool: DatabasePool, priority: Priority = .request, _ work: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let result = Mutex<T?>(nil)
            let pending = Pending(
                run: { db in
                    do {
                        try db.inSavepoint {
                            let value = try work(db)
                            result.withLock { $0 = value }
                            return .commit
                        }
                        return nil
                    } catch {
                        return error
                    }
                },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else if let value = result.withLock({ $0 }) {
                        continuation.resume(returning: value)
                    } else {
                        continuation.resume(throwing: CancellationError())
                    }
                })
            let (starts, waiting) = state.withLock { state -> (Bool, Int) in
                switch priority {
                case .request: state.requests.append(pending)
                case .work: state.work.append(pending)
                }
                let waiting = state.requests.count + state.work.count
                if state.writing { return (false, waiting) }
                state.writing = true
                return (true, waiting)
            }
            enqueued?(waiting)
            if starts { writeNextBatch(pool: pool) }
        }
    }

    /// Writes the waiting request units, then a few worker units, in one transaction; its
    /// completion tells each unit's caller and writes the next batch, until both queues are empty.
    private func writeNextBatch(pool: DatabasePool) {
        let batch = state.withLock { state -> [Pending] in
            var batch = Array(state.requests.prefix(maximumBatch))
            state.requests.removeFirst(batch.count)
            let work = state.work.prefix(min(workBatch, maximumBatch - batch.count))
            batch += work
            state.work.removeFirst(work.count)
            if batch.isEmpty { state.writing = false }
            return batch
        }
        guard !batch.isEmpty else { return }
        pool.asyncWrite({ db in batch.map { $0.run(db) } }) { _, result in
            switch result {
            case .success(let errors):
                for (pending, error) in zip(batch, errors) { pending.finish(error) }
            case .failure(let error):
                // The shared transaction itself failed (disk full, I/O error): nothing committed.
                for pending in batch { pending.finish(error) }
            }
            self.writeNextBatch(pool: pool)
        }
    }
}
