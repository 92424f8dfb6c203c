public import Foundation
public import Persistence
public import StorekeeperDomain

/// Verifications as callers and operators look them up. A caller sees only its own app's: a
/// verification of another app answers as absent, never as forbidden, so ids cannot be probed.
public struct ReadVerifications: Sendable {
    let store: any VerificationStore

    public init(store: any VerificationStore) {
        self.store = store
    }

    /// The verification `id` when it belongs to `appId` (any app when nil).
    public func verification(id: String, appId: String?) async throws -> VerificationRecord? {
        guard let record = try await store.verification(id: id) else { return nil }
        if let appId, record.appId != appId { return nil }
        return record
    }

    /// Oldest first; all states when `states` is empty; only those created before
    /// `createdBefore` when given (the operator's "flagged" list).
    public func list(appId: String?, states: [VerificationState], createdBefore: Date?, limit: Int) async throws -> [VerificationRecord] {
        try await store.verifications(appId: appId, states: states, createdBefore: createdBefore, limit: limit)
    }

    /// Access granted to a customer while Apple could not be asked, still running at `now`
    /// (docs/DOMAIN.md, provisional grants): what support sees before the verification ends.
    public func provisionalAccess(appId: String, appUserId: String, now: Date) async throws -> [ProvisionalGrant] {
        try await store.provisionalGrants(appId: appId, appUserId: appUserId, now: now)
    }

    /// A customer's, newest first (a customer's page).
    public func list(appId: String, appUserId: String, limit: Int) async throws -> [VerificationRecord] {
        try await store.verifications(appId: appId, appUserId: appUserId, limit: limit)
    }
}
