public import Foundation

/// The state of an auto-renewable subscription at an instant, derived from Apple's facts.
public enum SubscriptionStatus: String, Codable, Sendable, CaseIterable {
    case active
    /// Renewal failed, Apple is retrying and the developer granted a grace period: still entitled.
    case inGracePeriod = "in_grace_period"
    /// Renewal failed and Apple is retrying: not entitled until it recovers.
    case inBillingRetry = "in_billing_retry"
    case expired
    /// Refunded or revoked: treated as never bought.
    case revoked

    public var grantsAccess: Bool { self == .active || self == .inGracePeriod }

    /// Derives the state from facts at `now`. Never adds a duration to a date: Apple's
    /// `expires_date` and grace period end are the only clocks.
    public static func evaluate(_ facts: SubscriptionFacts, at now: Date) -> SubscriptionStatus {
        if facts.revokedAt != nil { return .revoked }
        if let expires = facts.expiresDate, now < expires { return .active }
        if let grace = facts.gracePeriodExpiresDate, now < grace { return .inGracePeriod }
        if facts.inBillingRetry { return .inBillingRetry }
        return .expired
    }
}
