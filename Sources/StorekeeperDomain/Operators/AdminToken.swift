public import Foundation

/// A named operator credential. Its secret is shown once, when made; only the secret's SHA-256
/// is stored (the secret is 32 random bytes, so a fast hash is enough: there is nothing to
/// guess word by word).
public struct AdminToken: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var role: AdminRole
    /// nil: every app.
    public var apps: [String]?
    public var createdAt: Date
    /// The actor that made it.
    public var createdBy: String
    /// Set when it was rotated: it keeps working until then, so scripts can move to the new one.
    public var expiresAt: Date?
    public var revokedAt: Date?
    /// The token this one replaced by rotation.
    public var replaces: String?

    public init(
        id: String, name: String, role: AdminRole, apps: [String]?, createdAt: Date, createdBy: String, expiresAt: Date? = nil,
        revokedAt: Date? = nil, replaces: String? = nil
    ) {
        self.id = id
        self.name = name
        self.role = role
        self.apps = apps
        self.createdAt = createdAt
        self.createdBy = createdBy
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.replaces = replaces
    }

    /// Whether it authenticates at `now`.
    public func isActive(at now: Date) -> Bool {
        revokedAt == nil && (expiresAt.map { now < $0 } ?? true)
    }

    /// What is wrong with a new token's name and apps; `knownApps`: the configured apps.
    public static func problems(name: String, apps: [String]?, knownApps: Set<String>) -> [String] {
        var problems: [String] = []
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0)
        }
        if name.isEmpty || name.unicodeScalars.count > 64 || !allowed {
            problems.append("name: 1-64 ASCII letters, digits, '-', '_' or '.'")
        }
        if let apps {
            if apps.isEmpty { problems.append("apps: at least one app, or leave it out for every app") }
            if let unknown = apps.first(where: { !knownApps.contains($0) }) { problems.append("apps: no app '\(unknown)'") }
        }
        return problems
    }
}
