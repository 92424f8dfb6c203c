/// What an operator's credential may do. Every role reads everything in its apps; the roles
/// differ in what they may change (`AdminAccessRule` says which change needs which role).
public enum AdminRole: String, Codable, Sendable, CaseIterable {
    /// Reads only: dashboards, support looking things up, auditors.
    case readOnly = "read_only"
    /// Customers and their access: grants and revocations, suspensions, offering overrides,
    /// deletion, a refresh from Apple, a retried verification.
    case support
    /// Money: imports of existing purchases and the answers to Apple's refund requests.
    case finance
    /// Everything, including the catalog, webhooks, Apple's settings and other credentials.
    case admin

    /// Whether a credential of this role may do what `needed` allows. Support and finance are
    /// side by side: neither includes the other.
    public func allows(_ needed: AdminRole) -> Bool {
        switch (self, needed) {
        case (.admin, _), (_, .readOnly): true
        default: self == needed
        }
    }

}
