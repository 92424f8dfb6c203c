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
