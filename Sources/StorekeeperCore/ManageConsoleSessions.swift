public import Foundation
public import Persistence

/// Ending a console session for every process of the deployment. Sessions themselves are signed
/// cookies (no database read to sign in or to show a page); a sign-out is stored, and each
/// process asks for it when a cookie it has not seen signed out is presented.
public struct ManageConsoleSessions: Sendable {
    let store: any ConsoleSessionStore

    public init(store: any ConsoleSessionStore) {
        self.store = store
    }

    /// Signs out the session named `nonce`, which would expire at `expires`.
    public func signOut(nonce: String, expires: Date, now: Date) async throws {
        try await store.recordSignOut(nonce: nonce, expires: expires, now: now)
    }

    public func isSignedOut(nonce: String) async throws -> Bool {
        try await store.isSignedOut(nonce: nonce)
    }
}
