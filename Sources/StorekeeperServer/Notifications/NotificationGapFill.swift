import Foundation
import JobQueue
import Logging
import Persistence
import ServiceLifecycle
import StorekeeperCore
import StorekeeperDomain

/// Recovers notifications Apple could not deliver: every `intervalSeconds`, for each app with a
/// Server API key, reads Apple's notification history since the previous pull (the first pull
/// looks back `lookbackSeconds`) and ingests every notification through the same path as a
/// delivered one. Idempotent by notificationUUID, so overlapping windows, several worker
/// processes and Apple's own late retries change nothing twice.
struct NotificationGapFill: Service, CustomStringConvertible {
    /// ServiceLifecycle logs every service: its name only, never the configuration and keys it holds.
    var description: String { "NotificationGapFill" }

    let context: ServerContext
    let policy: NotificationGapFillPolicy

    /// After a failed pull (Apple down, the database not migrated yet) the next comes sooner.
    static let retryAfterFailureSeconds: Double = 30

    func run() async throws {
        var since: [String: Date] = [:]
        // Per app: one warning when pulls start failing, one notice when they work again.
        var failing: [String: FailureBackoff] = [:]
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let started = context.now()
            var failed = false
            for app in context.apps where context.serverAPIClients[app.id] != nil {
                let from = NotificationGapFillWindows.start(previousEnd: since[app.id], now: started, lookbackSeconds: policy.lookbackSeconds)
                do {
                    let report = try await fill(app, from: from, to: started, cause: "scheduled")
                    since[app.id] = started
                    if let ended = failing[app.id]?.succeeded(), ended > 0 {
                        context.logger.notice("notification gap-fill works again", metadata: ["app": "\(app.id)", "failedPulls": "\(ended)"])
                    }
                    if report.recovered > 0 {
                        context.logger.notice(
                            "notifications recovered from Apple's history", metadata: ["app": "\(app.id)", "count": "\(report.recovered)"])
                    }
                } catch {
                    failed = true
                    if failing[app.id, default: FailureBackoff()].failed().startsOutage {
                        context.logger.warning(
                            "notification gap-fill failing; each next pull covers the window, logged again when it works",
                            metadata: ["app": "\(app.id)", "error": "\(error)"])
                    }
                    context.metrics.increment(Metric.gapFillFailuresTotal, labels: ["app": app.id])
                }
            }
            let pause = failed ? min(policy.intervalSeconds, Self.retryAfterFailureSeconds) : policy.intervalSeconds
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(pause)) }
        }
    }

    /// One pull of `[from, to)` (`FillNotificationGaps`), counted in `/metrics`.
    func fill(_ app: AppConfiguration, from: Date, to: Date, cause: String) async throws -> FillNotificationGaps.Report {
        guard let client = context.serverAPIClients[app.id] else { return FillNotificationGaps.Report() }
        let report = try await FillNotificationGaps(record: context.useCases.gapFillHistory.record)(
            appId: app.id, acceptsSandbox: app.acceptSandbox, onlyFailures: policy.onlyFailures, from: from, to: to, cause: cause,
            apple: NotificationHistoryReader(client: client), receiver: NotificationIngest(context: context), now: context.now,
            unrecorded: { error in
                context.logger.warning("could not keep the gap-fill's result", metadata: ["app": "\(app.id)", "error": "\(error)"])
            })
        context.metrics.increment(Metric.gapFillRecoveredTotal, labels: ["app": app.id], by: report.recovered)
        return report
    }
}
