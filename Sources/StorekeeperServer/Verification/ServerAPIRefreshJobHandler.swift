import AppStoreClient
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Runs a subscriber refresh from the App Store Server API (`RefreshFromServerAPI`: Apple's
/// health, the call, the retry, the hold) and grants what it verified the way every verification
/// kind does; only the grant, the count and the adapters are here.
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
        // Calls about a transaction try production first: that endpoint's health decides.
        let step = try await RefreshFromServerAPI(outcomes: outcomes)(
            lease, verificationId: verification.id, transactionIds: data.split(separator: ",").map(String.init).filter { !$0.isEmpty },
            configurationFingerprint: app.fingerprint, history: serverAPIs[app.id].map { HistorySource(history: $0, app: app) },
            health: health.map { EndpointHealth(monitor: $0, endpoint: .serverAPI("production")) }, retry: configuration.retry,
            probeCapSeconds: configuration.appleHealth.probeCapSeconds, unitRandom: { Double.random(in: 0..<1) }, now: now)
        switch step {
        case .grant(let evidence, let environment):
            let result = try await grant(
                lease, verification: verification, app: app, evidence: evidence,
                report: AttemptReport(statuses: [], environment: environment.storageName, reason: nil), now: at)
            metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": result.outcomeLabel])
        case .ended(let outcome?):
            metrics.increment(Metric.subscriberRefreshesTotal, labels: ["outcome": outcome])
        case .ended(nil):
            break
        }
        return .finishedByHandler
    }
}

/// `RefreshFromServerAPI`'s port to Apple: the app's `ServerAPIHistory`, its client's failures as
/// `AppleCallFailure`.
struct HistorySource: AppleHistoryFetching {
    let history: ServerAPIHistory
    let app: AppConfiguration

    func fetch(transactionIds: [String], now: Date) async throws -> AppleHistoryOutcome {
        do {
            switch try await history.fetch(transactionIds: transactionIds, app: app, now: now) {
            case .verified(let evidence, let environment, _): return .verified(evidence, environment: environment)
            case .rejected(let reason, let message): return .rejected(reason: reason, message: message)
            }
        } catch let error as ServerAPIError {
            throw AppleCallFailure(
                code: error.code.rawValue, isTransient: error.isTransient, retryAfter: error.retryAfter,
                appleAnswered: ServerAPIHistory.appleAnswered(error), credentialsRefused: error.code == .unauthorized)
        }
    }
}

/// One endpoint of this process's `AppleHealthMonitor`, as the application layer's port.
struct EndpointHealth: AppleAvailability {
    let monitor: AppleHealthMonitor
    let endpoint: AppleHealthMonitor.Endpoint

    func admitting(now: Date) async -> AppleHealth.Admission { await monitor.admitting(endpoint, now: now) }

    func record(answered: Bool, probe: Bool, sentAt: Date, now: Date) async {
        await monitor.record(endpoint, answered: answered, probe: probe, sentAt: sentAt, now: now)
    }

    func delayAfterFailure(sentAt: Date, scheduled: TimeInterval, now: Date, unitRandom: Double) async -> TimeInterval {
        await monitor.delayAfterFailure(endpoint, sentAt: sentAt, scheduled: scheduled, now: now, unitRandom: unitRandom)
    }

    func downSince() -> Date? { monitor.downSince(endpoint) }
}
