import Foundation
import Hummingbird
import JobQueue
import Logging
import NIOCore
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// `/healthz` and `/metrics`: unauthenticated, no secrets, no user data.
struct OperationsController {
    let context: ServerContext
    let runner: JobRunner?

    func register(on router: RouteTable) {
        // Unavailable when the database cannot be read now, or when real work (a request, the
        // workers' leasing) last failed to write: a read-only probe passes on a full disk.
        router.get("healthz") { _, _ in
            let unavailable: Response
            do {
                try await context.useCases.operations.probe()
                // The details are in the log; this route answers anyone, so it names no paths or errors.
                let failure = context.storageHealth.failure
                if failure == nil, runner?.storeIsFailing != true {
                    return try StorekeeperJSON.response(["status": "ok", "database": "ok", "version": StorekeeperVersion.current])
                }
                let since = failure.map { " since \(ISO8601DateFormatter().string(from: $0.since))" } ?? ""
                unavailable = try StorekeeperJSON.response(
                    [
                        "status": "unavailable", "database": "error", "error": "writes to the database are failing\(since)",
                        "version": StorekeeperVersion.current,
                    ],
                    status: .serviceUnavailable)
            } catch {
                context.logger.error("health check: the database cannot be read", metadata: ["error": "\(error)"])
                unavailable = try StorekeeperJSON.response(
                    [
                        "status": "unavailable", "database": "error", "error": "the database cannot be read",
                        "version": StorekeeperVersion.current,
                    ], status: .serviceUnavailable)
            }
            var response = unavailable
            response.headers[.retryAfter] = String(StorageHealth.retryAfterSeconds)
            return response
        }
        router.get("metrics") { _, _ in
            let now = context.now()
            let counts = try await context.useCases.operations.counts(
                appIds: context.apps.map(\.id), flagBefore: now.addingTimeInterval(-context.configuration.flagAfterSeconds), now: now)
            let health = context.appleHealth?.snapshot() ?? []
            context.metrics.forgetWebhookEndpoints(keeping: try await WebhookController.liveEndpointIds(context))
            let text = context.metrics.render(gauges: [
                (
                    Metric.jobs, "Durable jobs by state.",
                    JobState.allCases.map { (["state": $0.rawValue], Double(counts.jobs[$0] ?? 0)) }
                ),
                (
                    Metric.verifications, "Verifications by state.",
                    VerificationState.allCases.map { (["state": $0.rawValue], Double(counts.verifications[$0] ?? 0)) }
                ),
                (Metric.verificationsFlagged, "Verifications not final after flagAfterSeconds.", [([:], Double(counts.flagged))]),
                (Metric.jobsInFlight, "Jobs running in this process.", [([:], Double(runner?.runningCount ?? 0))]),
                (
                    Metric.webhookDeliveries, "Webhook deliveries by state (dead: dead letters awaiting replay).",
                    WebhookDelivery.State.allCases.map { (["state": $0.rawValue], Double(counts.deliveries[$0] ?? 0)) }
                ),
                (
                    Metric.webhookEndpointsPaused, "Webhook endpoints paused (by an operator or after failing deliveries).",
                    [([:], Double(counts.pausedEndpoints))]
                ),
                (
                    Metric.appleHealth, "1 for the state each Apple endpoint is in (as this process's workers see it).",
                    health.flatMap { endpoint, state in
                        AppleHealth.State.allCases.map { (["endpoint": endpoint.label, "state": $0.rawValue], $0 == state.state ? 1.0 : 0) }
                    }
                ),
                (
                    Metric.appleHealthStateSeconds, "How long each Apple endpoint has been in its state.",
                    health.map { endpoint, state in (["endpoint": endpoint.label], max(0, now.timeIntervalSince(state.since))) }
                ),
                (
                    Metric.verificationsWaitingForApple,
                    "Verifications waiting to be retried (retry_scheduled), and the age of the oldest in seconds.",
                    [(["measure": "count"], Double(counts.waiting)), (["measure": "oldest_age_seconds"], counts.oldestWaitingSeconds)]
                ),
            ])
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
}
