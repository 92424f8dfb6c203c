public import Foundation

/// Access to a named entitlement given by an operator, not bought: support compensation, a
/// tester, an influencer. For a duration or for life, revocable early. Never in the ledger: no
/// money moved.
public struct PromotionalGrant: Codable, Hashable, Sendable {
    /// Chosen by the caller (a retry with the same id grants once) or by the server.
    public var id: String
    public var appId: String
    public var appUserId: String
    public var entitlementId: String
    public var startsAt: Date
    /// Nil: for life.
    public var expiresAt: Date?
    /// Set when an operator ended it early.
    public var revokedAt: Date?
    /// Who granted it, as the operator named themselves with the admin key, and why.
    public var actor: String
    public var reason: String

    public init(
        id: String, appId: String, appUserId: String, entitlementId: String, startsAt: Date, expiresAt: Date?, revokedAt: Date? = nil,
        actor: String, reason: String
    ) {
        self.id = id
        self.appId = appId
        self.appUserId = appUserId
        self.entitlementId = entitlementId
        self.startsAt = startsAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.actor = actor
        self.reason = reason
    }

    /// `date` down to its whole millisecond: what storage keeps of it (in milliseconds), so a
    /// grant read back never starts after the instant it was granted at.
    public static func start(at date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    public func isActive(at now: Date) -> Bool {
        revokedAt == nil && startsAt <= now && expiresAt.map { now < $0 } ?? true
    }

    /// The durations a grant takes: ISO 8601 with ASCII digits, at least one part, each up to
    /// 99999, not all of them zero (`P7D`, `P1M`, `PT12H`; a `P0D` grant would end as it
    /// starts). The API document states the same pattern.
    public static let durationPattern =
        #"^P(?=[0-9]|T[0-9])(?=[^1-9]*[1-9])([0-9]{1,5}Y)?([0-9]{1,5}M)?([0-9]{1,5}W)?([0-9]{1,5}D)?(T(?=[0-9])([0-9]{1,5}H)?([0-9]{1,5}M)?([0-9]{1,5}S)?)?$"#

    /// What is wrong with a request to grant, each problem naming its field. Lengths in Unicode
    /// code points, as the API document's JSON Schema counts them.
    public static func problems(actor: String, reason: String, duration: String?) -> [String] {
        var problems: [String] = []
        if isBlank(actor) || actor.unicodeScalars.count > 200 { problems.append("actor: 1-200 characters, not all spaces") }
        if isBlank(reason) || reason.unicodeScalars.count > 1000 { problems.append("reason: 1-1000 characters, not all spaces") }
        if let duration, duration.range(of: durationPattern, options: .regularExpression) == nil || ISODuration(duration) == nil {
            problems.append("duration: an ISO 8601 duration such as P7D, P1M or PT12H, or absent for life")
        }
        return problems
    }

    /// Empty or only white space, as JSON Schema's `\S` sees it (Unicode White_Space but NEL,
    /// and the byte-order mark).
    static func isBlank(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { ($0.properties.isWhitespace && $0 != "\u{85}") || $0 == "\u{FEFF}" }
    }
}

extension PromotionalGrant {
    /// The event of granting (`promotional_grant`) or ending it (`promotional_grant_revoked`),
    /// its id derived from the grant, so recording it again adds nothing.
    public func event(_ type: EventType, reason: String, now: Date) -> SubscriberEvent {
        var details = SubscriberEvent.Details(reason: reason, expiresDate: type == .promotionalGrantRevoked ? revokedAt : expiresAt)
        details.entitlementId = entitlementId
        details.grantId = id
        return SubscriberEvent(
            id: SubscriberEvent.id(type: type, subject: entitlementId, cause: id), type: type, appId: appId, environment: nil,
            appUserId: appUserId, occurredAt: now, recordedAt: now, details: details)
    }
}
