public import Foundation

/// Attempts counted by what they count against (an operator's account, an address, a user's
/// offer signatures), kept where every process reads them: an attacker who spreads attempts
/// over N processes gets no more than one process allows.
public protocol AttemptStore: Sendable {
    /// Records one attempt of `key` at `at` and returns the key's attempts at or after `since`,
    /// oldest first, this one included. Attempts of any key before `forgetBefore` are deleted in
    /// the same transaction, so the table holds only attempts that still count.
    func recordAttempt(key: String, at: Date, since: Date, forgetBefore: Date) async throws -> [Date]
    /// The key's attempts at or after `since`, oldest first.
    func attempts(key: String, since: Date) async throws -> [Date]
    /// Forgets the key's attempts (a successful sign-in).
    func clearAttempts(key: String) async throws
}
