public import Foundation

/// Console sessions ended before their expiry. A session is a signed cookie that any process of
/// the deployment reads without the database; a sign-out is the one fact about it that every
/// process must learn, so it is stored.
public protocol ConsoleSessionStore: Sendable {
    /// Records that the session named `nonce` is signed out; its row lasts until `expires`, when the
    /// cookie would be refused anyway. Rows already past their expiry at `now` are deleted in the
    /// same transaction, so the table holds only sessions that could still be presented.
    func recordSignOut(nonce: String, expires: Date, now: Date) async throws
    /// Whether the session named `nonce` was signed out, by any process.
    func isSignedOut(nonce: String) async throws -> Bool
}
