import Foundation
import Synchronization

/// Sign-in failures and sign-outs, in this process: an account (or the admin key) is locked for
/// `lockSeconds` after `maximumFailures` failed sign-ins within that time, and a signed-out
/// session is refused until it would have expired. A made-up name is counted and locked the same
/// way (so lockouts tell no one which names are real), but in a table of its own, bounded to
/// `capacity` entries (the oldest forgotten first): a flood of made-up names cannot grow memory,
/// and cannot push a real account's lock out either, since the accounts that exist (`protected`)
/// are never forgotten.
final class ConsoleGate: Sendable {
    static let maximumFailures = 5
    static let lockSeconds: TimeInterval = 15 * 60
    static let capacity = 10_000

    private struct State {
        var failures: [String: [Date]] = [:]
        var revoked: [String: Date] = [:]
    }

    /// The names of the accounts that exist (the admin key's and each operator's).
    let protected: Set<String>

    init(protected: Set<String> = []) {
        self.protected = protected
    }

    private let state = Mutex(State())
    /// Password checks running now.
    let passwordChecks = Mutex(0)

    /// When `account` may try again, if it is locked at `now`.
    func lockedUntil(_ account: String, now: Date) -> Date? {
        state.withLock { state in
            let recent = (state.failures[account] ?? []).filter { now.timeIntervalSince($0) < Self.lockSeconds }
            guard recent.count >= Self.maximumFailures, let last = recent.last else { return nil }
            return last.addingTimeInterval(Self.lockSeconds)
        }
    }

    func recordFailure(_ account: String, now: Date) {
        state.withLock { state in
            var recent = (state.failures[account] ?? []).filter { now.timeIntervalSince($0) < Self.lockSeconds }
            recent.append(now)
            state.failures[account] = Array(recent.suffix(Self.maximumFailures))
            let protected = self.protected
            if state.failures.count > Self.capacity + protected.count {
                let stale = state.failures.filter {
                    !protected.contains($0.key) && ($0.value.last ?? now) < now.addingTimeInterval(-Self.lockSeconds)
                }
                .map(\.key)
                for key in stale { state.failures[key] = nil }
                while state.failures.count > Self.capacity + protected.count,
                    let oldest = state.failures.filter({ !protected.contains($0.key) }).min(by: { ($0.value.last ?? now) < ($1.value.last ?? now) })
                {
                    state.failures[oldest.key] = nil
                }
            }
        }
    }

    func recordSuccess(_ account: String) {
        _ = state.withLock { $0.failures.removeValue(forKey: account) }
    }

    func revoke(_ nonce: String, until expires: Date, now: Date) {
        state.withLock { state in
            state.revoked = state.revoked.filter { $0.value > now }
            if state.revoked.count < Self.capacity * 10 { state.revoked[nonce] = expires }
        }
    }

    func isRevoked(_ nonce: String) -> Bool {
        state.withLock { $0.revoked[nonce] != nil }
    }
}

extension ConsoleGate {
    /// Takes a slot for a password check, or says there is none free.
    func beginPasswordCheck(limit: Int) -> Bool {
        passwordChecks.withLock { running in
            guard running < limit else { return false }
            running += 1
            return true
        }
    }

    func endPasswordCheck() {
        passwordChecks.withLock { $0 -= 1 }
    }
}
