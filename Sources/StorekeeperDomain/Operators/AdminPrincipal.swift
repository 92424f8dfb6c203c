/// Who an admin request was authenticated as: the configured admin key (a bootstrap credential
/// with every right) or a named token. The audit log names this, never what a caller writes.
public struct AdminPrincipal: Sendable, Hashable {
    /// The audit log's actor: `admin key`, or `token:<name>`.
    public var name: String
    public var role: AdminRole
    /// The apps it may reach; nil: every app, and the routes that are not an app's.
    public var apps: Set<String>?
    /// The token's id; nil for the admin key.
    public var tokenId: String?

    public init(name: String, role: AdminRole, apps: Set<String>?, tokenId: String?) {
        self.name = name
        self.role = role
        self.apps = apps
        self.tokenId = tokenId
    }

    /// The configured admin key.
    public static let adminKey = AdminPrincipal(name: "admin key", role: .admin, apps: nil, tokenId: nil)

    public init(token: AdminToken) {
        self.init(name: "token:\(token.name)", role: token.role, apps: token.apps.map(Set.init), tokenId: token.id)
    }

    /// Whether it may make a request that needs `role`, on `app` (nil: a route of no one app).
    public func may(_ role: AdminRole, app: String?) -> Bool {
        guard self.role.allows(role) else { return false }
        guard let apps else { return true }
        guard let app else { return false }
        return apps.contains(app)
    }
}
