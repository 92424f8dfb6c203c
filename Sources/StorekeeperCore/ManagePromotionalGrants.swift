public import Foundation
public import Persistence
public import StorekeeperDomain

/// An operator gives a user an entitlement without a purchase, or ends it early; each action
/// with who and why in the audit log, and as events (the entitlement's own events follow from
/// them). Nothing here touches the ledger: no money moved.
public struct ManagePromotionalGrants: Sendable {
    public typealias Store = PromotionalGrantStore & CatalogStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public struct GrantRequest: Sendable {
        public var appId: String
        public var appUserId: String
        public var entitlementId: String
        /// ISO 8601 (`P1M`); nil: for life.
        public var duration: String?
        /// The authenticated credential; its `declared` name (the body's `actor`) is the grant's.
        public var actor: AuditActor
        public var reason: String
        /// The caller's id for the grant, to retry without granting twice.
        public var grantId: String?

        public init(
            appId: String, appUserId: String, entitlementId: String, duration: String?, actor: AuditActor, reason: String, grantId: String?
        ) {
            self.appId = appId
            self.appUserId = appUserId
            self.entitlementId = entitlementId
            self.duration = duration
            self.actor = actor
            self.reason = reason
            self.grantId = grantId
        }
    }

    public enum GrantOutcome: Sendable, Hashable {
        /// `created` false: the same grant id was stored before (a retry).
        case granted(PromotionalGrant, created: Bool)
        case invalid([String])
        case unknownEntitlement
        /// The grant id names another user's or entitlement's grant.
        case conflict(PromotionalGrant)
    }

    public func grant(_ request: GrantRequest, now: Date) async throws -> GrantOutcome {
        var problems = PromotionalGrant.problems(
            actor: request.actor.declared ?? request.actor.name, reason: request.reason, duration: request.duration)
        if let id = request.grantId, UUID(uuidString: id) == nil { problems.append("grantId: a UUID (8-4-4-4-12 hexadecimal digits)") }
        guard problems.isEmpty else { return .invalid(problems) }
        guard try await store.entitlementDefinitions(appId: request.appId).contains(where: { $0.id == request.entitlementId }) else {
            return .unknownEntitlement
        }
        let id = request.grantId?.lowercased() ?? UUID().uuidString.lowercased()
        if let stored = try await store.promotionalGrant(appId: request.appId, grantId: id) { return answer(stored, to: request) }
        let start = PromotionalGrant.start(at: now)
        let grant = PromotionalGrant(
            id: id, appId: request.appId, appUserId: request.appUserId, entitlementId: request.entitlementId, startsAt: start,
            expiresAt: request.duration.flatMap(ISODuration.init).map { $0.added(to: start) },
            actor: request.actor.declared ?? request.actor.name, reason: request.reason)
        let audit = AuditEntry(
            id: "audit_\(id)_grant", appId: request.appId, at: now, actor: request.actor.name, action: "promotional_grant",
            appUserId: request.appUserId, reason: request.reason, subject: id
        ).attributed(to: request.actor)
        let stored = try await store.recordPromotionalGrant(
            grant, audit: audit, events: EventBatch(events: [grant.event(.promotionalGrant, reason: request.reason, now: now)]),
            now: now)
        return stored == grant ? .granted(grant, created: true) : answer(stored, to: request)
    }

    /// A stored grant met again by id: the same request retried, or another one reusing its id.
    private func answer(_ stored: PromotionalGrant, to request: GrantRequest) -> GrantOutcome {
        stored.appUserId == request.appUserId && stored.entitlementId == request.entitlementId
            ? .granted(stored, created: false) : .conflict(stored)
    }

    public enum RevokeOutcome: Sendable, Hashable {
        /// `changed` false: it was revoked before (a retry).
        case revoked(PromotionalGrant, changed: Bool)
        /// It ran to its own end before; nothing to revoke.
        case alreadyEnded(PromotionalGrant)
        case notFound
        case invalid([String])
    }

    public func revoke(appId: String, grantId: String, actor: AuditActor, reason: String, now: Date) async throws -> RevokeOutcome {
        let problems = PromotionalGrant.problems(actor: actor.declared ?? actor.name, reason: reason, duration: nil)
        guard problems.isEmpty else { return .invalid(problems) }
        let id = grantId.lowercased()
        guard let stored = try await store.promotionalGrant(appId: appId, grantId: id) else { return .notFound }
        if stored.revokedAt != nil { return .revoked(stored, changed: false) }
        if let end = stored.expiresAt, end <= now { return .alreadyEnded(stored) }
        let audit = AuditEntry(
            id: "audit_\(id)_revoke", appId: appId, at: now, actor: actor.name, action: "promotional_grant_revoked",
            appUserId: stored.appUserId, reason: reason, subject: id
        ).attributed(to: actor).before(stored)
        guard
            let result = try await store.revokePromotionalGrant(
                appId: appId, grantId: id, at: now, audit: audit,
                events: { revoked in EventBatch(events: [revoked.event(.promotionalGrantRevoked, reason: reason, now: now)]) },
                now: now)
        else { return .notFound }
        return .revoked(result.grant, changed: result.revoked)
    }

    public func grants(appId: String, appUserId: String) async throws -> [PromotionalGrant] {
        try await store.promotionalGrants(appId: appId, appUserId: appUserId)
    }

    /// What operators did to one customer, newest first.
    public func audit(appId: String, appUserId: String, limit: Int) async throws -> [RecordedAuditEntry] {
        try await store.auditEntries(appId: appId, appUserId: appUserId, limit: limit)
    }
}
