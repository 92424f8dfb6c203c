public import Foundation
public import Persistence
public import StorekeeperDomain

/// Attempts that must be limited across every process — failed sign-ins, failed admin
/// credentials, offer signatures — counted in the database, so that every process refuses the
/// same key at the same time (`AttemptLimit`).
public struct CountAttempts: Sendable {
    let store: any AttemptStore

    public init(store: any AttemptStore) { self.store = store }

    /// No attempt is kept longer than this, so made-up keys cannot grow the table without bound.
    /// It is the longest window any limit uses (a day: offer signatures), since a prune deletes
    /// every key's old attempts.
    public static let horizon: TimeInterval = 86_400

    /// When `key` may try again; nil when it may now.
    public func blockedUntil(_ key: String, limit: AttemptLimit, now: Date) async throws -> Date? {
        let now = Self.stored(now)
        return limit.blockedUntil(try await store.attempts(key: key, since: now.addingTimeInterval(-limit.window)), now: now)
    }

    /// Records an attempt; returns when the key may try again (nil: at once).
    @discardableResult
    public func record(_ key: String, limit: AttemptLimit, now: Date) async throws -> Date? {
        let now = Self.stored(now)
        let attempts = try await store.recordAttempt(
            key: key, at: now, since: now.addingTimeInterval(-limit.window), forgetBefore: now.addingTimeInterval(-max(Self.horizon, limit.window)))
        return limit.blockedUntil(attempts, now: now)
    }

    /// Forgets the key's attempts (a successful sign-in).
    public func clear(_ key: String) async throws {
        try await store.clearAttempts(key: key)
    }

    /// `now` as the store keeps instants (milliseconds), so an attempt made now is never read
    /// back as one made a fraction of a millisecond later.
    static func stored(_ now: Date) -> Date { StoredTime.date(StoredTime.ms(now)) }
}
