import Foundation
import GRDB
import Synchronization

/// Runs concurrent write units together: one SQLite transaction (and, with synchronous=FULL,
/// one fsync) for a batch instead of one per unit. Each unit runs in its own savepoint, so a
/// unit that throws is rolled back alone and its caller gets the error; the others commit.
/// Every caller returns only after the transaction holding its writes has committed, so
/// "answered" always means "durable".
///
/// No task of its own: the caller that finds nobody writing commits the next batch in its own
/// task, and hands the turn to the first caller still waiting, so every batch runs in the task
/// of a caller that waits for it (structured; cancellation and priority follow the callers).
final class GroupCommitter: Sendable {
    private struct Pending: Sendable {
        /// Runs the unit inside the shared transaction; returns its error if it failed.
        var run: @Sendable (Database) -> (any Error)?
        var turn: Turn
    }

    private struct State {
        var queue: [Pending] = []
        /// A caller is committing a batch, or has been handed the turn to.
        var committing = false
    }

    private let state = Mutex(State())
    /// Most units in one transaction, so one batch never holds the writer for long.
    let maximumBatch: Int

    init(maximumBatch: Int = 256) {
        self.maximumBatch = maximumBatch
    }

    func write<T: Sendable>(pool: DatabasePool, _ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let result = Mutex<T?>(nil)
        let turn = Turn()
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
            turn: turn)
        let leads = state.withLock { state -> Bool in
            state.queue.append(pending)
            if state.committing { return false }
            state.committing = true
            return true
        }
        var event: Turn.Event = leads ? .commitNext : await turn.next()
        while true {
            switch event {
            case .commitNext:
                // This caller's unit is first in the queue, so it is in the batch committed now.
                await commitBatch(pool: pool)
                event = await turn.next()
            case .finished(let error):
                if let error { throw error }
                guard let value = result.withLock({ $0 }) else { throw CancellationError() }
                return value
            }
        }
    }

    /// Commits the units at the head of the queue, tells each its outcome, then hands the turn
    /// to the first unit still queued (or ends the turn when none is).
    private func commitBatch(pool: DatabasePool) async {
        let batch = state.withLock { state -> [Pending] in
            let batch = Array(state.queue.prefix(maximumBatch))
            state.queue.removeFirst(batch.count)
            return batch
        }
        do {
            let errors = try await pool.write { db in batch.map { $0.run(db) } }
            for (pending, error) in zip(batch, errors) { pending.turn.deliver(.finished(error)) }
        } catch {
            // The shared transaction itself failed (disk full, I/O error): nothing committed.
            for pending in batch { pending.turn.deliver(.finished(error)) }
        }
        let next = state.withLock { state -> Turn? in
            guard let first = state.queue.first else {
                state.committing = false
                return nil
            }
            return first.turn
        }
        next?.deliver(.commitNext)
    }

    /// What a waiting caller is woken for: its unit's outcome, or its turn to commit a batch.
    /// Events reach a caller one at a time (a unit in a batch is no longer queued, so it is
    /// never handed the turn), so one slot suffices.
    private final class Turn: Sendable {
        enum Event: Sendable {
            case finished((any Error)?)
            case commitNext
        }

        private struct Slot {
            var event: Event?
            var waiter: CheckedContinuation<Event, Never>?
        }

        private let slot = Mutex(Slot())

        func deliver(_ event: Event) {
            let waiter = slot.withLock { slot -> CheckedContinuation<Event, Never>? in
                guard let waiter = slot.waiter else {
                    slot.event = event
                    return nil
                }
                slot.waiter = nil
                return waiter
            }
            waiter?.resume(returning: event)
        }

        func next() async -> Event {
            await withCheckedContinuation { (continuation: CheckedContinuation<Event, Never>) in
                let ready = slot.withLock { slot -> Event? in
                    guard let event = slot.event else {
                        slot.waiter = continuation
                        return nil
                    }
                    slot.event = nil
                    return event
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }
}
