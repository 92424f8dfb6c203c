import Foundation
import Synchronization

/// Sign-outs and password checks, in this process: a signed-out session is refused until it
/// would have expired (every process also reads the stored sign-out), and at most a few scrypt
/// checks run at once. Failed sign-ins are counted in the database (`GuardCredentials`).
final class ConsoleGate: Sendable {
    static let capacity = 10_000

    private struct State {
        var revoked: [String: Date] = [:]
    }

    private let state = Mutex(State())
    /// Password checks running now.
    let passwordChecks = Mutex(0)

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
