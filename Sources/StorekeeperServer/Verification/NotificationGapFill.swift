import AppStoreClient
import AppStoreModels
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

    /// What one pull found.
    struct Report: Codable, Sendable, Equatable {
        var examined = 0
        /// Notifications not seen before, now stored and processed.
        var recovered = 0
        var duplicates = 0
        /// Refused or unreadable entries (counted in metrics by reason).
        var failed = 0
        var pages = 0
    }

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

    /// One pull of `[from, to)` (`NotificationGapFillWindows`): every page of each window, each
    /// notification through the same ingest as a delivered one. Kept with what it found, or why
    /// it failed, for the health page (`cause`: `scheduled` or `operator`).
    func fill(_ app: AppConfiguration, from: Date, to: Date, cause: String) async throws -> Report {
        guard context.serverAPIClients[app.id] != nil else { return Report() }
        let startedAt = context.now()
        var report = Report()
        var failure: (any Error)?
        do {
            try await pull(app, from: from, to: to, into: &report)
        } catch {
            failure = error
        }
        let run = GapFillRun(
            cause: cause, appId: app.id, startedAt: startedAt, from: from, to: to, examined: report.examined, recovered: report.recovered,
            duplicates: report.duplicates, failed: report.failed, pages: report.pages, error: failure.map { String("\($0)".prefix(500)) })
        do {
            try await context.useCases.gapFillHistory.record(run)
        } catch {
            context.logger.warning("could not keep the gap-fill's result", metadata: ["app": "\(app.id)", "error": "\(error)"])
        }
        if let failure { throw failure }
        return report
    }

    private func pull(_ app: AppConfiguration, from: Date, to: Date, into report: inout Report) async throws {
        guard let client = context.serverAPIClients[app.id] else { return }
        let ingest = NotificationIngest(context: context)
        for window in NotificationGapFillWindows.windows(from: from, to: to, acceptsSandbox: app.acceptSandbox) {
            let environment = window.environment
            let request = NotificationHistoryRequest(
                startDate: window.start, endDate: window.end, onlyFailures: policy.onlyFailures ? true : nil)
            var token: String?
            repeat {
                let page = try await client.notificationHistory(request, paginationToken: token, environment: environment)
                report.pages += 1
                for item in page.notificationHistory ?? [] {
                    guard let signed = item.signedPayload else { continue }
                    report.examined += 1
                    do {
                        let answer = try await ingest.ingest(signedPayload: signed)
                        if answer.duplicate { report.duplicates += 1 } else { report.recovered += 1 }
                    } catch {
                        report.failed += 1
                    }
                }
                token = page.hasMore == true ? page.paginationToken : nil
            } while token != nil
        }
        context.metrics.increment(Metric.gapFillRecoveredTotal, labels: ["app": app.id], by: report.recovered)
    }
}
