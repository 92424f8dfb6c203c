import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperDomain
import Synchronization

/// This process's calls to Apple (verifyReceipt, the Server API, OCSP) since the last flush,
/// tallied by endpoint, outcome and minute in memory: recording a call is a dictionary update
/// under a lock, never a write. `AppleCallFlusher` adds the tallies to the database.
public final class AppleCallRecorder: Sendable {
    private let pending = Mutex<[AppleCallTally.Key: AppleCallTally]>([:])
    /// Whether a flush or a read holds `exclusively`, and who waits for it.
    private let turn = Mutex<(held: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

    /// Distinct tallies held between flushes at most; past it, calls count under the outcome
    /// `other`. An outcome is a label Apple's answer chose (a verifyReceipt status), so a
    /// misbehaving host must not grow this without end.
    static let maximumPending = 2_000

    public init() {}

    func record(endpoint: AppleHealthMonitor.Endpoint, outcome: String, elapsed: Duration, at instant: Date) {
        let (seconds, attoseconds) = elapsed.components
        let milliseconds = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        let minute = AppleCallTally.minute(of: instant)
        pending.withLock { pending in
            var key = AppleCallTally.Key(endpoint: endpoint.label, outcome: outcome, period: minute)
            if pending[key] == nil, pending.count >= Self.maximumPending { key.outcome = "other" }
            pending[key, default: AppleCallTally(endpoint: key.endpoint, outcome: key.outcome, period: minute)].add(milliseconds: milliseconds)
        }
    }

    /// A Server API client's call, on the endpoint Apple's health names for its environment.
    func record(_ call: AppleCallObservation, at instant: Date) {
        record(endpoint: .serverAPI(call.environment.storageName), outcome: call.outcome, elapsed: call.elapsed, at: instant)
    }

    /// Runs `body` while no flush (nor another read) runs: a flush drains the tallies before its
    /// write commits, so a read between the two would see them nowhere; a read of the stored
    /// tallies with `unflushed()` inside this sees each call exactly once.
    func exclusively<T>(_ body: () async throws -> T) async rethrows -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = turn.withLock { turn in
                if turn.held {
                    turn.waiting.append(continuation)
                    return false
                }
                turn.held = true
                return true
            }
            if now { continuation.resume() }
        }
        defer {
            let next: CheckedContinuation<Void, Never>? = turn.withLock { turn in
                guard !turn.waiting.isEmpty else {
                    turn.held = false
                    return nil
                }
                return turn.waiting.removeFirst()
            }
            next?.resume()
        }
        return try await body()
    }

    /// The tallies not flushed yet (what the health page adds to the stored ones).
    func unflushed() -> [AppleCallTally] {
        pending.withLock { Array($0.values) }
    }

    /// Takes every pending tally for a flush.
    func drain() -> [AppleCallTally] {
        pending.withLock { pending in
            defer { pending.removeAll(keepingCapacity: true) }
            return Array(pending.values)
        }
    }

    /// Puts back tallies whose flush failed, added to what was recorded since.
    func restore(_ tallies: [AppleCallTally]) {
        pending.withLock { pending in
            for tally in tallies {
                pending[tally.key, default: AppleCallTally(endpoint: tally.endpoint, outcome: tally.outcome, period: tally.period)].add(tally)
            }
        }
    }
}
