public import Foundation

/// Access withheld from a subscriber whatever they bought: while it stands, their answer and
/// events show no active entitlement and no active product (what they bought is still listed, and
/// money is untouched). Set when a parent or guardian withdraws consent under the app's
/// `revoke_access` policy (Apple's RESCIND_CONSENT), or by an operator; lifted by an operator.
public struct AccessSuspension: Codable, Hashable, Sendable {
    /// `consent_rescinded`, or an operator's words.
    public var reason: String
    public var since: Date
    /// Who suspended: an operator, or `apple:RESCIND_CONSENT`.
    public var actor: String

    public init(reason: String, since: Date, actor: String) {
        self.reason = reason
        self.since = since
        self.actor = actor
    }
}

extension SubscriberView {
    /// The view while `suspension` stands: no access from any purchase or grant, history kept.
    public mutating func apply(_ suspension: AccessSuspension?) {
        guard let suspension else { return }
        accessSuspended = suspension
        activeEntitlements = []
        entitlements = [:]
        provisionalEntitlements = []
    }
}

/// What the app asks Storekeeper to do when Apple says a parent or guardian withdrew consent
/// (RESCIND_CONSENT; docs/EVENTS.md): record it only, also withhold access, or delete the
/// holders' personal data.
public enum RescindConsentPolicy: String, Codable, Hashable, Sendable, CaseIterable {
    case record
    case revokeAccess = "revoke_access"
    case deleteData = "delete_data"
}
