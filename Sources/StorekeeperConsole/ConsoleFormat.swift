public import Foundation
public import StorekeeperDomain

/// How the console writes amounts, instants and renewals: exact, and the same on every page.
public enum ConsoleFormat {
    /// Exact: an amount in micro-units as a decimal, trailing zeros past the cents dropped.
    public static func money(_ micros: Int64) -> String {
        let sign = micros < 0 ? "-" : ""
        let magnitude = micros.magnitude
        var fraction = String(magnitude % 1_000_000)
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.count > 2, fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(magnitude / 1_000_000).\(fraction)"
    }

    /// A chart's label: short enough for a dozen side by side.
    public static func label(_ date: Date, _ interval: ReportInterval) -> String {
        let day = day(date)
        return interval == .month ? String(day.prefix(7)) : String(day.suffix(5))
    }

    public static func day(_ date: Date) -> String {
        String(instant(date).prefix(10))
    }

    public static func instant(_ date: Date) -> String {
        date.formatted(.iso8601)
    }

    /// What support is asked about first: will it renew, and if not, why (Apple's billing retry,
    /// with its grace period, or the subscriber's own choice).
    public static func renewal(_ entitlement: Entitlement) -> String {
        if entitlement.billingIssue {
            return entitlement.gracePeriodExpiresAt.map { "billing issue, grace until \(instant($0))" } ?? "billing issue"
        }
        if entitlement.unsubscribed { return "turned off" }
        return entitlement.willRenew.map { $0 ? "renews" : "does not renew" } ?? "—"
    }

    /// A duration as an operator reads it: seconds, minutes or hours and minutes.
    public static func duration(_ seconds: TimeInterval) -> String {
        let whole = max(0, Int(seconds.rounded(.down)))
        if whole < 60 { return "\(whole) s" }
        if whole < 3_600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3_600) h \(whole % 3_600 / 60) min"
    }

    /// Text as one segment of a console URL: everything but unreserved characters escaped, so a
    /// user id (which may be any text) can neither leave its segment nor add a query.
    public static func pathSegment(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }
}
