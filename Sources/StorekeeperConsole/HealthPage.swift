public import Foundation
public import Persistence
public import StorekeeperCore
public import StorekeeperDomain

/// Apple's health and the queue: each endpoint as this process sees it, every process's calls by
/// hour, the outages they shared, the notifications received and pulled, and the verifications.
public struct HealthPage: Sendable, Hashable {
    public struct Endpoint: Sendable, Hashable {
        public var endpoint: String
        public var state: String
        public var since: String
        public var failures: Int
        public var nextProbe: String
    }

    public struct CallHour: Sendable, Hashable {
        public var hour: String
        public var endpoint: String
        public var calls: Int64
        /// How the calls ended, most first: "http_503 × 40, http_200 × 3".
        public var outcomes: String
        public var p50: String
        public var p95: String
        public var p99: String
        public var mean: String
    }

    public struct OutageRow: Sendable, Hashable {
        public var endpoint: String
        public var began: String
        public var ended: String
        public var lasted: String
    }

    public struct NotificationRow: Sendable, Hashable {
        public var app: String
        public var type: String
        public var outcome: String
        public var count: Int
    }

    public struct GapFillRow: Sendable, Hashable {
        public var app: String
        public var started: String
        public var cause: String
        public var window: String
        public var examined: Int
        public var recovered: Int
        public var duplicates: Int
        public var failed: Int
        public var error: String
    }

    public var endpoints: [Endpoint]
    public var callHours: Int
    public var calls: [CallHour]
    public var outageDays: Int
    public var outages: [OutageRow]
    public var notifications: [NotificationRow]
    public var gapFillShown: Int
    public var gapFills: [GapFillRow]
    public var verificationStates: [ConsoleCount]
    public var flagAfter: String
    public var flagged: Int
    public var waiting: Int
    public var oldestWaiting: String

    /// The windows the reads were asked for (`callHours`, `outageDays`, `gapFillShown`) are shown
    /// with what they found; an outage not over yet lasts until `now`.
    public init(
        endpoints: [(label: String, health: AppleHealth)], calls: [AppleCallHistory.Hour], callHours: Int, outages: [ReadOperations.Outage],
        outageDays: Int, notifications: [NotificationCount], gapFills: [GapFillRun], gapFillShown: Int, counts: ReadOperations.Counts,
        flagAfterSeconds: Double, now: Date
    ) {
        self.endpoints = endpoints.map { endpoint, health in
            Endpoint(
                endpoint: endpoint, state: health.state.rawValue, since: ConsoleFormat.instant(health.since),
                failures: health.consecutiveFailures, nextProbe: health.nextProbeAt.map(ConsoleFormat.instant) ?? "—")
        }
        self.callHours = callHours
        self.calls = calls.map { hour in
            CallHour(
                hour: ConsoleFormat.instant(hour.hour), endpoint: hour.endpoint, calls: hour.all.count,
                outcomes: hour.outcomes.map { "\($0.outcome) × \($0.count)" }.joined(separator: ", "),
                p50: hour.all.percentile(0.5)?.description ?? "—", p95: hour.all.percentile(0.95)?.description ?? "—",
                p99: hour.all.percentile(0.99)?.description ?? "—",
                mean: hour.all.count == 0 ? "—" : "\(hour.all.totalMilliseconds / hour.all.count) ms")
        }
        self.outageDays = outageDays
        self.outages = outages.map { outage in
            OutageRow(
                endpoint: outage.endpoint, began: ConsoleFormat.instant(outage.began), ended: outage.ended.map(ConsoleFormat.instant) ?? "not yet",
                lasted: ConsoleFormat.duration((outage.ended ?? now).timeIntervalSince(outage.began)))
        }
        self.notifications = notifications.map {
            NotificationRow(app: $0.appId, type: $0.notificationType, outcome: $0.outcome.rawValue, count: $0.count)
        }
        self.gapFillShown = gapFillShown
        self.gapFills = gapFills.map { run in
            GapFillRow(
                app: run.appId, started: ConsoleFormat.instant(run.startedAt), cause: run.cause,
                window: "\(ConsoleFormat.instant(run.from)) – \(ConsoleFormat.instant(run.to))", examined: run.examined,
                recovered: run.recovered, duplicates: run.duplicates, failed: run.failed, error: run.error ?? "—")
        }
        verificationStates = VerificationState.allCases.map { ConsoleCount(state: $0.rawValue, count: counts.verifications[$0] ?? 0) }
        flagAfter = "\(Int(flagAfterSeconds)) s"
        flagged = counts.flagged
        waiting = counts.waiting
        oldestWaiting = counts.waiting == 0 ? "—" : "\(Int(counts.oldestWaitingSeconds)) s"
    }
}
