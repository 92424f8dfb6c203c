import JobQueue
import Synchronization

/// Tells every process what commits did (jobs queued, verifications changed), after those
/// commits: one `pg_notify` statement for however many commits asked since the last one went
/// out, each payload once.
///
/// A `NOTIFY` inside the writing transaction would be delivered exactly at its commit, but
/// PostgreSQL serializes the commits of every transaction that notifies (they take one lock on
/// the notification queue): measured with pgbench on this project's submission statement, 6,653
/// commits/s without it and 2,865/s with it. Announcing after the commit keeps the order that
/// matters (whoever is woken finds the commit done) and takes that lock once per round trip
/// instead of once per commit. A process that dies between a commit and its announcement costs
/// the other processes one poll: runners poll for jobs, and `?wait=` answers re-read on timeout.
///
/// `spacing` is the least time between two statements: under a steady stream of commits that
/// queue jobs the hints go out as one statement per spacing instead of one per round trip, each
/// of which PostgreSQL serializes and every listener wakes for. A listener learns of a job at most
/// that much later, where it would otherwise wait for its poll.
final class CommitAnnouncer: Sendable {
    /// Payloads not yet sent, in the order first asked, each once.
    private let pending = Mutex<(order: [String], seen: Set<String>)>(([], []))
    private let signal = WakeSignal()
    private let spacing: Duration
    /// Payloads per statement: a burst is announced in several statements, not one unbounded one.
    static let batchLimit = 1_000

    init(spacing: Duration = .zero) {
        self.spacing = spacing
    }

    /// After a commit (never before: whoever is woken must find it).
    func committed(_ payloads: some Sequence<String>) {
        pending.withLock { pending in
            for payload in payloads where pending.seen.insert(payload).inserted { pending.order.append(payload) }
        }
        signal.wake()
    }

    /// Until the task is cancelled: whenever commits asked, `send` with what they asked. A failed
    /// send is not retried (see above for why nothing is lost).
    func run(send: @Sendable ([String]) async throws -> Void) async {
        while !Task.isCancelled {
            await signal.wait(timeout: 60)
            while true {
                let batch = pending.withLock { pending -> [String] in
                    let batch = Array(pending.order.prefix(Self.batchLimit))
                    pending.order.removeFirst(batch.count)
                    pending.seen.subtract(batch)
                    return batch
                }
                if batch.isEmpty { break }
                try? await send(batch)
                if spacing > .zero { try? await Task.sleep(for: spacing) }
            }
        }
    }
}
