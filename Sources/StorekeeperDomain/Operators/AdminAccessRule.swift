/// Which role an admin route needs: the one table of it. A route is its method and its path
/// pattern below `v1/admin`, captures written `{name}` (`apps/{app}/subscribers/{appUserId}`);
/// `*` in the table stands for any capture. Reads need only
/// `readOnly`; a change needs the role of its family, and any change not listed here needs
/// `admin`, so a route added later is closed until someone opens it.
public enum AdminAccessRule {
    /// Changes to customers and their access.
    static let support: [[String]] = [
        ["apps", "*", "subscribers"],
        ["apps", "*", "promotional-grants"],
        ["apps", "*", "users", "*", "refresh"],
        ["verifications", "*", "retry"],
    ]
    /// Changes to money.
    static let finance: [[String]] = [
        ["apps", "*", "imports"],
        ["apps", "*", "transactions", "*", "consumption"],
    ]
    /// Reads that hand out credentials or name every operator: admin only.
    static let adminReads: [[String]] = [["tokens"]]
    /// Routes of no one app that a credential limited to some apps may still call: its own view.
    static let ownView: [[String]] = [["whoami"]]
    /// Changes whose use case writes its audit entry in the change's own transaction; every other
    /// change is recorded by the gate once it has succeeded (`AdminGate`).
    static let auditedInTransaction: [(method: String, prefix: [String])] = [
        ("POST", ["apps", "*", "subscribers", "*", "promotional-grants"]),
        ("POST", ["apps", "*", "promotional-grants", "*", "revoke"]),
        ("PUT", ["apps", "*", "entitlements", "*"]), ("DELETE", ["apps", "*", "entitlements", "*"]),
        ("PUT", ["apps", "*", "offerings", "*"]), ("DELETE", ["apps", "*", "offerings", "*"]),
        ("PUT", ["apps", "*", "offering-targeting"]),
        ("PUT", ["apps", "*", "experiments", "*"]), ("POST", ["apps", "*", "experiments", "*", "stop"]),
        ("POST", ["apps", "*", "experiments", "*", "ship"]),
        ("PUT", ["apps", "*", "subscribers", "*", "offering-override"]), ("DELETE", ["apps", "*", "subscribers", "*", "offering-override"]),
        ("PUT", ["apps", "*", "subscribers", "*", "suspension"]), ("DELETE", ["apps", "*", "subscribers", "*", "suspension"]),
        ("DELETE", ["apps", "*", "subscribers", "*"]),
        ("POST", ["verifications", "*", "retry"]),
        ("POST", ["apps", "*", "users", "*", "refresh"]),
        ("POST", ["apps", "*", "webhooks", "*", "replay"]),
        ("POST", ["apps", "*", "webhooks", "*", "deliveries", "*", "replay"]),
        ("POST", ["apps", "*", "webhooks", "*", "deliveries", "*", "skip"]),
        ("POST", ["tokens"]), ("POST", ["tokens", "*", "revoke"]), ("POST", ["tokens", "*", "rotate"]),
    ]

    /// The role a request needs; `segments`: the path pattern's segments after `v1/admin`.
    public static func required(method: String, segments: [String]) -> AdminRole {
        if isRead(method) { return starts(segments, adminReads) ? .admin : .readOnly }
        if starts(segments, support) { return .support }
        if starts(segments, finance) { return .finance }
        return .admin
    }

    /// Whether a credential limited to some apps may call this route of no one app.
    public static func isOwnView(segments: [String]) -> Bool { segments.count == 1 && starts(segments, ownView) }

    /// Whether a successful request changed something the gate must write to the audit log: a
    /// change whose use case does not audit it in its own transaction.
    public static func needsGateAudit(method: String, segments: [String]) -> Bool {
        guard !isRead(method) else { return false }
        return !auditedInTransaction.contains { rule in
            rule.method == method && segments.count == rule.prefix.count && starts(segments, [rule.prefix])
        }
    }

    static func isRead(_ method: String) -> Bool { method == "GET" || method == "HEAD" }

    static func starts(_ segments: [String], _ prefixes: [[String]]) -> Bool {
        prefixes.contains { prefix in
            segments.count >= prefix.count
                && zip(prefix, segments).allSatisfy { rule, segment in rule == "*" ? segment.hasPrefix("{") : rule == segment }
        }
    }
}
