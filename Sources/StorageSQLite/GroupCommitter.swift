import Foundation
import GRDB
import Synchronization

/// Runs concurrent write units together: one SQLite transaction (and, with synchronous=FULL,
/// one fsync) for a batch instead of one per unit. Each unit runs in its own savepoint, so a
/// unit that throws is rolled back alone and its caller gets the error; the others commit.
/// Every caller returns only after the transaction holding its writes has committed, so
/// "answered" always means "durable".
final class GroupCommitter: Sendable {
    private struct Pending: Sendable {
        /// Runs the unit inside the shared transaction; returns its error if it failed.
        var run: @Sendable (Database) -> (any Error)?
        /// Delivers the outcome once the transaction has committed (or failed as a whole).
        var finish: @Sendable ((any Error)?) -> Void
    }

    private struct State {
        var queue: [Pending] = []
        var draining = false
    }

    private let state = Mutex(State())
    /// Most units in one transaction, so one batch never holds the writer for long.
    let maximumBatch: Int

    init(maximumBatch: Int = 256) {
        self.maximumBatch = maximumBatch
    }

    func write<T: Sendable>(pool: DatabasePool, _ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
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
            let leads = state.withLock { state -> Bool in
                state.queue.append(pending)
                if state.draining { return false }
                state.draining = true
                return true
            }
            // The first caller to find nobody draining drains for everyone, then hands back.
            if leads { Task { await self.drain(pool: pool) } }
        }
    }

    private func drain(pool: DatabasePool) async {
        while true {
            let batch = state.withLock { state -> [Pending] in
                let batch = Array(state.queue.prefix(maximumBatch))
                state.queue.removeFirst(batch.count)
                if batch.isEmpty { state.draining = false }
                return batch
            }
            if batch.isEmpty { return }
            do {
                let errors = try await pool.write { db in batch.map { $0.run(db) } }
                for (pending, error) in zip(batch, errors) { pending.finish(error) }
            } catch {
                // The shared transaction itself failed (disk full, I/O error): nothing committed.
                for pending in batch { pending.finish(error) }
            }
        }
    }
}
