public import Foundation
public import Persistence
public import StorekeeperDomain

/// Operators' named tokens: made, listed, revoked, rotated with an overlap, and the credential a
/// request presents looked up on every request (so a revocation holds on every process at
/// once). The edge makes the secrets and hashes them; only hashes reach this layer.
public struct ManageAdminTokens: Sendable {
    let store: any AdminTokenStore & PromotionalGrantStore

    public init(store: any AdminTokenStore & PromotionalGrantStore) { self.store = store }

    /// Where token changes are kept in the audit log: they belong to no one app.
    public static let auditApp = "*"

    /// The principal of the token whose secret hashes to `secretHash`, if it is active at `now`.
    public func principal(secretHash: String, now: Date) async throws -> AdminPrincipal? {
        guard let token = try await store.adminToken(secretHash: secretHash), token.isActive(at: now) else { return nil }
        return AdminPrincipal(token: token)
    }

    public enum CreateOutcome: Sendable, Hashable {
        case created(AdminToken)
        case invalid([String])
    }

    public struct NewToken: Sendable {
        public var name: String
        public var role: AdminRole
        public var apps: [String]?

        public init(name: String, role: AdminRole, apps: [String]?) {
            self.name = name
            self.role = role
            self.apps = apps
        }
    }

    public func create(
        _ new: NewToken, knownApps: Set<String>, secretHash: String, actor: AuditActor, now: Date
    ) async throws
        -> CreateOutcome
    {
        let problems = AdminToken.problems(name: new.name, apps: new.apps, knownApps: knownApps)
        guard problems.isEmpty else { return .invalid(problems) }
        let token = AdminToken(
            id: Self.freshId(), name: new.name, role: new.role, apps: new.apps.map { Array(Set($0)).sorted() }, createdAt: now,
            createdBy: actor.name)
        try await store.insertAdminToken(token, secretHash: secretHash, audit: Self.audit("admin_token_created", token, actor: actor, now: now))
        return .created(token)
    }

    public func tokens() async throws -> [AdminToken] { try await store.adminTokens() }

    public enum ChangeOutcome: Sendable, Hashable {
        /// The token as stored after the change, and a rotation's new token.
        case changed(AdminToken, replacement: AdminToken?)
        case notFound
        /// Revoked or expired already.
        case inactive(AdminToken)
    }

    public func revoke(id: String, actor: AuditActor, now: Date) async throws -> ChangeOutcome {
        guard var token = try await store.adminToken(id: id) else { return .notFound }
        guard token.isActive(at: now) else { return .inactive(token) }
        let before = token
        token.revokedAt = now
        let audit = Self.audit("admin_token_revoked", token, actor: actor, now: now).before(before)
        guard try await store.updateAdminToken(token, activeAt: now, audit: audit, replacement: nil) else {
            return .inactive(try await store.adminToken(id: id) ?? token)
        }
        return .changed(token, replacement: nil)
    }

    /// A new secret under the same name, role and apps; the old one keeps working for
    /// `overlapSeconds` (or until it would have expired anyway) so scripts can move over.
    public func rotate(id: String, overlapSeconds: Int, secretHash: String, actor: AuditActor, now: Date) async throws -> ChangeOutcome {
        guard var old = try await store.adminToken(id: id) else { return .notFound }
        guard old.isActive(at: now) else { return .inactive(old) }
        let before = old
        let end = now.addingTimeInterval(TimeInterval(overlapSeconds))
        old.expiresAt = min(old.expiresAt ?? end, end)
        let new = AdminToken(
            id: Self.freshId(), name: old.name, role: old.role, apps: old.apps, createdAt: now, createdBy: actor.name, replaces: old.id)
        let audit = Self.audit("admin_token_rotated", new, actor: actor, now: now).before(before)
        guard
            try await store.updateAdminToken(
                old, activeAt: now, audit: audit, replacement: AdminTokenReplacement(token: new, secretHash: secretHash))
        else { return .inactive(try await store.adminToken(id: id) ?? old) }
        return .changed(old, replacement: new)
    }

    /// The audit log `query` asks for.
    public func audit(_ query: AuditQuery) async throws -> [RecordedAuditEntry] {
        try await store.auditEntries(matching: query)
    }

    /// An operator's change whose use case keeps no audit entry of its own (the catalog, webhook
    /// endpoints, Apple's settings, imports), recorded once it has succeeded: `action` is
    /// `admin_change`, the subject the method and path, the route pattern and answer in `change`.
    public func recordChange(
        id: String, appId: String?, method: String, path: String, route: String, status: Int, actor: AuditActor, now: Date
    ) async throws {
        try await store.appendAuditEntry(
            AuditEntry.request(id: id, appId: appId ?? Self.auditApp, method: method, path: path, route: route, status: status, actor: actor, at: now)
        )
    }

    static func freshId() -> String { "tok_\(UUID().uuidString.lowercased())" }

    static func audit(_ action: String, _ token: AdminToken, actor: AuditActor, now: Date) -> AuditEntry {
        AuditEntry.change(appId: auditApp, at: now, actor: actor.name, action: action, reason: actor.reason, subject: token.id, saved: token)
            .attributed(to: actor)
    }
}
