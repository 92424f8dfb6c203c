import AppStoreModels
public import Foundation
public import StorekeeperWire

/// One operator action, kept for whoever later asks who did what, to what and why.
public struct AuditEntry: Codable, Hashable, Sendable {
    public var id: String
    public var appId: String
    public var at: Date
    /// Who was authenticated: `admin key`, `token:<name>`, `console:<operator>`, or the server
    /// itself acting on Apple's word (`apple:<notification type>`). Never what a caller wrote.
    public var actor: String
    /// The name the caller gave (`Storekeeper-Actor`, a grant's `actor`), kept beside `actor`
    /// for teams that share one credential; nil when none was given.
    public var declaredActor: String?
    /// The client address the change came from, as the trusted proxies report it.
    public var from: String?
    /// `promotional_grant`, `promotional_grant_revoked`, `entitlement_saved`,
    /// `entitlement_deleted`, `offering_saved`, `offering_deleted`, `offering_targeting_saved`,
    /// `offering_override_set`, `offering_override_cleared`, `verification_requeued`,
    /// `webhook_replayed`, `webhook_skipped`, `subscriber_refreshed` (new actions may appear).
    public var action: String
    /// The app user acted on; nil for an app-wide change.
    public var appUserId: String?
    public var reason: String
    /// The object acted on: a grant's, entitlement's or offering's id (`targeting` for the
    /// targeting).
    public var subject: String
    /// The object as saved, for a change that saves one.
    public var change: JSONValue?
    /// The object as it was just before the change (read before it, so a change made in between
    /// by someone else is not told apart), for a change of one small object; nil when it did not
    /// exist or is not kept.
    public var before: JSONValue?

    public init(
        id: String, appId: String, at: Date, actor: String, action: String, appUserId: String?, reason: String, subject: String,
        change: JSONValue? = nil
    ) {
        self.id = id
        self.appId = appId
        self.at = at
        self.actor = actor
        self.action = action
        self.appUserId = appUserId
        self.reason = reason
        self.subject = subject
        self.change = change
    }

    /// The entry with the object as it was before the change.
    public func before(_ object: (some Encodable)?) -> AuditEntry {
        var entry = self
        entry.before = object.flatMap { try? JSONEncoder().encode($0) }.flatMap { try? JSONDecoder().decode(JSONValue.self, from: $0) }
        return entry
    }

    /// The entry in `actor`'s name: who was authenticated, the name they gave, and from where.
    public func attributed(to actor: AuditActor) -> AuditEntry {
        var entry = self
        entry.actor = actor.name
        entry.declaredActor = actor.declared
        entry.from = actor.from
        return entry
    }

    /// An operator's request that changed something without an audit entry of its own:
    /// `admin_change`, the method and path as subject, the route pattern and status in `change`.
    public static func request(
        id: String, appId: String, method: String, path: String, route: String, status: Int, actor: AuditActor, at: Date
    ) -> AuditEntry {
        AuditEntry(
            id: id, appId: appId, at: at, actor: actor.name, action: "admin_change", appUserId: nil, reason: actor.reason,
            subject: "\(method) \(path)", change: .object(["route": .string("\(method) \(route)"), "status": .number(Double(status))])
        ).attributed(to: actor)
    }

    /// A new entry's id: every action that is not keyed by its object (a grant's id) is its own entry.
    public static func freshId() -> String { "audit_\(UUID().uuidString.lowercased())" }

    /// An operator's change of app-wide settings (entitlements, offerings), with the object as
    /// saved. The id is fresh: every change is its own entry.
    public static func change(
        appId: String, at: Date, actor: String, action: String, reason: String, subject: String, appUserId: String? = nil,
        saved: (some Encodable)?
    ) -> AuditEntry {
        let value = saved.flatMap { try? JSONEncoder().encode($0) }.flatMap { try? JSONDecoder().decode(JSONValue.self, from: $0) }
        return AuditEntry(
            id: freshId(), appId: appId, at: at, actor: actor, action: action, appUserId: appUserId,
            reason: reason, subject: subject, change: value)
    }
}

/// Who acts and why: the authenticated credential's name, the name the caller gave
/// (`Storekeeper-Actor`), the reason (`Storekeeper-Reason`) and the client address.
public struct AuditActor: Sendable, Hashable {
    public var name: String
    public var reason: String
    public var declared: String?
    public var from: String?

    public init(name: String, reason: String, declared: String? = nil, from: String? = nil) {
        self.name = name
        self.reason = reason
        self.declared = declared
        self.from = from
    }

    public func problems() -> [String] {
        var problems: [String] = []
        if name.isEmpty || name.unicodeScalars.count > 200 { problems.append("actor: 1-200 characters") }
        if let declared, declared.isEmpty || declared.unicodeScalars.count > 200 { problems.append("actor: 1-200 characters") }
        if reason.unicodeScalars.count > 1000 { problems.append("reason: at most 1000 characters") }
        return problems
    }
}
