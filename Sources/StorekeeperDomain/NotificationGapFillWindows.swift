public import AppStoreModels
public import Foundation

/// Which part of Apple's notification history a gap-fill pull reads: decided here, at given
/// instants, so the pull itself only pages through what this names.
public enum NotificationGapFillWindows {
    /// Windows overlap by this much, so a notification signed at a window's edge is not missed.
    public static let overlapSeconds: Double = 300

    /// How far back Apple keeps notification history: 180 days in production, 30 in the
    /// sandbox (Apple refuses an earlier start date with 4000012).
    public static func historyDays(_ environment: AppStoreEnvironment) -> Double { environment == .sandbox ? 30 : 180 }

    /// Where a scheduled pull starts: where the previous one ended (`lookbackSeconds` before
    /// `now` on the first), less the overlap.
    public static func start(previousEnd: Date?, now: Date, lookbackSeconds: Double) -> Date {
        (previousEnd ?? now.addingTimeInterval(-lookbackSeconds)).addingTimeInterval(-overlapSeconds)
    }

    public struct Window: Sendable, Hashable {
        public var environment: AppStoreEnvironment
        public var start: Date
        public var end: Date

        public init(environment: AppStoreEnvironment, start: Date, end: Date) {
            self.environment = environment
            self.start = start
            self.end = end
        }
    }

    /// `[from, to)` in each environment the app accepts, each from no earlier than that
    /// environment keeps history (a minute's margin for Apple's clock). An empty window holds
    /// nothing and Apple refuses it (4000013), so none is returned for it; a lookback shorter
    /// than a date's precision makes one (found by Schemathesis).
    public static func windows(from: Date, to: Date, acceptsSandbox: Bool) -> [Window] {
        let environments: [AppStoreEnvironment] = acceptsSandbox ? [.production, .sandbox] : [.production]
        return environments.compactMap { environment in
            let earliest = to.addingTimeInterval(-historyDays(environment) * 86_400 + 60)
            let start = max(from, earliest)
            return start < to ? Window(environment: environment, start: start, end: to) : nil
        }
    }
}
