public import AppStoreModels
public import Foundation

/// One operator action, kept for whoever later asks who did what, to what and why.
public struct AuditEntry: Codable, Hashable, Sendable {
    public var id: String
    public var appId: String
    public var at: Date
    /// As the operator named themselves (`Storekeeper-Actor` on routes whose body is the object
    /// itself; `admin` when not named).
    public var actor: String
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

/// Who acts and why, as an operator names themselves on a change whose body is the object
/// itself (`Storekeeper-Actor`, `Storekeeper-Reason`).
public struct AuditActor: Sendable, Hashable {
    public var name: String
    public var reason: String

    public init(name: String, reason: String) {
        self.name = name
        self.reason = reason
    }

    public func problems() -> [String] {
        var problems: [String] = []
        if name.isEmpty || name.unicodeScalars.count > 200 { problems.append("actor: 1-200 characters") }
        if reason.unicodeScalars.count > 1000 { problems.append("reason: at most 1000 characters") }
        return problems
    }
}
