import AppStoreClient
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Refreshes one subscriber from the App Store Server API: the history of each of their
/// original transactions and the renewal info of their subscriptions, verified, then granted
/// through the same planner and exactly-once keys as everything else. Apple unavailable or
/// rate-limiting: retried on the job's schedule (after Retry-After when Apple gave one). While
/// the Server API is down (`AppleHealthMonitor`), only a probe calls it; the others wait
/// without spending an attempt and are released when it answers.
struct ServerAPIRefreshJobHandler: VerificationJobHandler {
    let kind = refreshFromServerAPIJobKind
    let outcomes: VerificationOutcomes
    let serverAPIs: [String: ServerAPIHistory]
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date
    var health: AppleHealthMonitor? = nil

    func verify(
        _ lease: JobLease, verification: VerificationRecord, data: String, app: AppConfiguration
    ) async throws -> JobOutcome {
        let at = now()
        guard let history = serverAPIs[app.id] else {
            let report = AttemptReport(statuses: [], environment: nil, reason: .serverAPINotConfigured)
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verification.id, report: report, configurationFingerprint: app.fingerprint, now: at)
            return .finishedByHandler
        }
        let ids = data.split(separator: ",").map(String.init).filter { !$0.isEmpty }
        // Calls about a transaction try production first: that endpoint's health decides.
        let endpoint = AppleHealthMonitor.Endpoint.serverAPI("production")
        let admission = await health?.admitting(endpoint, now: at) ?? .call
        if case .wait(let until) = admission {
            let next = max(until, at).addingTimeInterval(Double.random(in: 0...configuration.appleHealth.probeCapSeconds))
            let report = AttemptReport(statuses: [], environment: nil, reason: .appleDown)
            _ = try await outcomes.scheduleRetry(lease, verificationId: verification.id, report: report, at: next, countsAttempt: false, now: at)
            metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": "apple_down"])
            return .finishedByHandler
        }
        let probe = if case .probe = admission { true } else { false }
        let fetched: Result<ServerAPIHistory.Outcome, any Error>
        do {
            fetched = .success(try await history.fetch(transactionIds: ids, app: app, now: at))
        } catch {
            fetched = .failure(error)
        }
        if let health {
            let answered = if case .failure(let error) = fetched { ServerAPIHistory.appleAnswered(error) } else { true }
            await health.record(endpoint, answered: answered, probe: probe, sentAt: at, now: now())
        }
        do {
            switch try fetched.get() {
            case .verified(let evidence, let environment, _):
                let result = try await grant(
                    lease, verification: verification, app: app, evidence: evidence,
                    report: AttemptReport(statuses: [], environment: environment.storageName, reason: nil), now: at)
                metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": result.outcomeLabel])
            case .rejected(let reason, _):
                _ = try await outcomes.finishInvalid(
                    lease, verificationId: verification.id, report: AttemptReport(statuses: [], environment: nil, reason: reason), now: at)
                metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": "invalid"])
            }
        } catch let error as ServerAPIError where error.isTransient {
            // Apple came back while this call was out: it goes now, like the released ones;
            // Apple down: back round the probe (`delayAfterFailure`).
            let scheduled = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
            let delay =
                await health?.delayAfterFailure(endpoint, sentAt: at, scheduled: scheduled, now: now(), unitRandom: Double.random(in: 0..<1))
                ?? scheduled
            let backoff = at.addingTimeInterval(delay)
            let next = max(backoff, error.retryAfter ?? backoff)
            let report = AttemptReport(statuses: [], environment: nil, reason: .serverAPI("\(error.code)"))
            _ = try await outcomes.scheduleRetry(lease, verificationId: verification.id, report: report, at: next, now: at)
            metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": "retry"])
        } catch let error as ServerAPIError {
            let report = AttemptReport(statuses: [], environment: nil, reason: .serverAPI("\(error.code)"))
            if error.code == .unauthorized {
                _ = try await outcomes.holdForConfiguration(
                    lease, verificationId: verification.id, report: report, configurationFingerprint: app.fingerprint, now: at)
            } else {
                _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            }
            metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": "\(error.code)"])
        }
        return .finishedByHandler
    }
}
