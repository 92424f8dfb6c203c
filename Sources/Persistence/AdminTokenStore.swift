public import Foundation
public import StorekeeperDomain

/// Operators' named tokens. Every process reads a token from here on each request, so a
/// revocation is refused by every process from the next request on.
public protocol AdminTokenStore: Sendable {
    /// Stores a new token under its secret's hash, with its audit entry, in one transaction.
    func insertAdminToken(_ token: AdminToken, secretHash: String, audit: AuditEntry) async throws
    /// The token whose secret hashes to `secretHash`, active or not.
    func adminToken(secretHash: String) async throws -> AdminToken?
    func adminToken(id: String) async throws -> AdminToken?
    /// Every token, revoked and expired ones too, oldest first.
    func adminTokens() async throws -> [AdminToken]
    /// Stores `token` (revoked, or expiring after a rotation) over the stored one, guarded by the
    /// stored one being active at `now`, with the audit entry and the `replacement` (a rotation's
    /// new token) in the same transaction. False, with nothing written, when it was not active.
    func updateAdminToken(
        _ token: AdminToken, activeAt now: Date, audit: AuditEntry, replacement: AdminTokenReplacement?
    )
        async throws -> Bool
    /// Appends one entry to the audit log, once per id.
    func appendAuditEntry(_ entry: AuditEntry) async throws
}

/// A rotation's new token and its secret's hash.
public struct AdminTokenReplacement: Sendable, Hashable {
    public var token: AdminToken
    public var secretHash: String

    public init(token: AdminToken, secretHash: String) {
        self.token = token
        self.secretHash = secretHash
    }
}

/// Which audit entries to read, oldest first after `after`.
public struct AuditQuery: Sendable, Hashable {
    /// nil: every app's (and the entries of no app, such as token changes, kept under `*`).
    public var appIds: [String]?
    public var actor: String?
    public var action: String?
    public var appUserId: String?
    /// Entries at or after.
    public var since: Date?
    /// Entries before.
    public var until: Date?
    public var after: Int64
    public var limit: Int

    public init(
        appIds: [String]?, actor: String? = nil, action: String? = nil, appUserId: String? = nil, since: Date? = nil,
        until: Date? = nil, after: Int64 = 0, limit: Int
    ) {
        self.appIds = appIds
        self.actor = actor
        self.action = action
        self.appUserId = appUserId
        self.since = since
        self.until = until
        self.after = after
        self.limit = limit
    }
}
