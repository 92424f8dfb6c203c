import Foundation
import Hummingbird
import JobQueue
import Logging
import NIOCore
import Persistence
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
                _ = try await context.store.jobCounts()
                // The details are in the log; this route answers anyone, so it names no paths or errors.
                let failure = context.storageHealth.failure
                if failure == nil, runner?.storeIsFailing != true {
                    return try StorekeeperJSON.response(["status": "ok", "database": "ok"])
                }
                let since = failure.map { " since \(ISO8601DateFormatter().string(from: $0.since))" } ?? ""
                unavailable = try StorekeeperJSON.response(
                    ["status": "unavailable", "database": "error", "error": "writes to the database are failing\(since)"],
                    status: .serviceUnavailable)
            } catch {
                context.logger.error("health check: the database cannot be read", metadata: ["error": "\(error)"])
                unavailable = try StorekeeperJSON.response(
                    ["status": "unavailable", "database": "error", "error": "the database cannot be read"], status: .serviceUnavailable)
            }
            var response = unavailable
            response.headers[.retryAfter] = String(StorageHealth.retryAfterSeconds)
            return response
        }
        router.get("metrics") { _, _ in
            let jobs = try await context.store.jobCounts()
            let verifications = try await context.store.verificationCounts()
            let flagged = try await context.store.countVerifications(
                states: VerificationState.allCases.filter { !$0.isFinal },
                createdBefore: context.now().addingTimeInterval(-context.configuration.flagAfterSeconds))
            let deliveries = try await context.store.deliveryCounts()
            let pausedEndpoints = try await context.configuration.apps.asyncReduce(0) { count, app in
                count + (try await context.store.endpoints(appId: app.id).filter { $0.state == .paused }.count)
            }
            let now = context.now()
            let health = context.appleHealth?.snapshot() ?? []
            let waiting = try await waitingVerifications(now: now)
            let text = context.metrics.render(gauges: [
                (
                    Metric.jobs, "Durable jobs by state.",
                    JobState.allCases.map { (["state": $0.rawValue], Double(jobs[$0] ?? 0)) }
                ),
                (
                    Metric.verifications, "Verifications by state.",
                    VerificationState.allCases.map { (["state": $0.rawValue], Double(verifications[$0] ?? 0)) }
                ),
                (Metric.verificationsFlagged, "Verifications not final after flagAfterSeconds.", [([:], Double(flagged))]),
                (Metric.jobsInFlight, "Jobs running in this process.", [([:], Double(runner?.runningCount ?? 0))]),
                (
                    Metric.webhookDeliveries, "Webhook deliveries by state (dead: dead letters awaiting replay).",
                    WebhookDelivery.State.allCases.map { (["state": $0.rawValue], Double(deliveries[$0] ?? 0)) }
                ),
                (
                    Metric.webhookEndpointsPaused, "Webhook endpoints paused (by an operator or after failing deliveries).",
                    [([:], Double(pausedEndpoints))]
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
                    [(["measure": "count"], Double(waiting.count)), (["measure": "oldest_age_seconds"], waiting.oldestAge)]
                ),
            ])
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
}

extension OperationsController {
    /// Verifications scheduled for another try (Apple failed or is down), and how long the
    /// oldest has waited since it was submitted.
    func waitingVerifications(now: Date) async throws -> (count: Int, oldestAge: Double) {
        let count = try await context.store.verificationCounts()[.retryScheduled] ?? 0
        guard count > 0 else { return (0, 0) }
        let oldest = try await context.store.verifications(appId: nil, states: [.retryScheduled], createdBefore: nil, limit: 1).first
        return (count, max(0, oldest.map { now.timeIntervalSince($0.createdAt) } ?? 0))
    }
}

extension Sequence {
    /// `reduce` whose step may suspend.
    func asyncReduce<Result>(_ initial: Result, _ next: (Result, Element) async throws -> Result) async rethrows -> Result {
        var result = initial
        for element in self { result = try await next(result, element) }
        return result
    }
}
