import Foundation
import GRDB
import Persistence
import Synchronization

/// Commits concurrent receipt submissions together: one write transaction (and one fsync)
/// for a batch instead of one per request. Every caller still returns only after the
/// transaction holding its own rows has committed, so a 202 always means "durable".
final class GroupCommitter: Sendable {
    private struct Pending {
        var submission: ReceiptSubmission
        var now: Date
        var continuation: CheckedContinuation<SubmissionResult, any Error>
    }

    private struct State {
        var queue: [Pending] = []
        var draining = false
    }

    private let state = Mutex(State())
    /// Most submissions in one transaction, so one batch never holds the writer for long.
    let maximumBatch: Int

    init(maximumBatch: Int = 256) {
        self.maximumBatch = maximumBatch
    }

    func submit(_ submission: ReceiptSubmission, now: Date, pool: DatabasePool) async throws -> SubmissionResult {
        try await withCheckedThrowingContinuation { continuation in
            let leads = state.withLock { state -> Bool in
                state.queue.append(Pending(submission: submission, now: now, continuation: continuation))
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
                let results = try await pool.write { db in
                    try batch.map { try SQLiteStore.submit(db, $0.submission, now: $0.now) }
                }
                for (pending, result) in zip(batch, results) { pending.continuation.resume(returning: result) }
            } catch {
                // One bad submission must not fail its neighbours: retry each on its own.
                for pending in batch {
                    do {
                        let result = try await pool.write { db in try SQLiteStore.submit(db, pending.submission, now: pending.now) }
                        pending.continuation.resume(returning: result)
                    } catch {
                        pending.continuation.resume(throwing: error)
                    }
                }
            }
        }
    }
}
