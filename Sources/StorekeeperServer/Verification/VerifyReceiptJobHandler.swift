import AppStoreCrypto
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Runs one receipt attempt (`RunReceiptAttempt`: the local check's verdict, verifyReceipt per
/// environment as Apple's health admits, the stand-in, the outage policy, the retry) and grants
/// what Apple verified the way every verification kind does; the adapters, the metrics and the
/// logs are here.
struct VerifyReceiptJobHandler: VerificationJobHandler {
    let kind = verifyReceiptJobKind
    let outcomes: VerificationOutcomes
    /// verifyReceipt, one port per job's request.
    let verifiers: ReceiptVerifiers
    let gate: ReceiptGate?
    /// Per app with a Server API key: stands in for verifyReceipt while it fails.
    let serverAPIs: [String: ServerAPIHistory]
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date
    /// Apple's health in this process: while verifyReceipt is down, only probes call it.
    var health: AppleHealthMonitor? = nil

    func verify(
        _ lease: JobLease, verification: VerificationRecord, data receipt: String, app: AppConfiguration
    ) async throws -> JobOutcome {
        let local: RunReceiptAttempt.LocalCheck =
            switch await gate?.check(receipt) ?? .unchecked {
            case .rejected(let reason): .rejected(reason)
            case .unchecked: .unchecked
            case .verified(let parsed): .verified(Self.local(parsed))
            }
        let request = VerifyReceiptRequest(
            receiptData: receipt, password: app.sharedSecret, excludeOldTransactions: configuration.excludeOldTransactions)
        let attempt = RunReceiptAttempt(
            outcomes: outcomes,
            settings: .init(
                retry: configuration.retry, probeCapSeconds: configuration.appleHealth.probeCapSeconds, outagePolicy: configuration.outagePolicy),
            observer: ReceiptAttemptMetrics(metrics: metrics, logger: logger, appId: app.id), unitRandom: { Double.random(in: 0..<1) },
            now: now)
        let monitor = health
        let apple = RunReceiptAttempt.Apple(
            verifyReceipt: verifiers(request),
            serverAPI: serverAPIs[app.id].map { HistorySource(history: $0, app: app) },
            health: { name in monitor.map { EndpointHealth(monitor: $0, endpoint: .init(name)) } })
        let step = try await attempt(
            lease, verification: verification, local: local,
            app: .init(id: app.id, bundleId: app.bundleId, acceptsSandbox: app.acceptSandbox, fingerprint: app.fingerprint), apple: apple)
        if case .grant(let evidence, let report) = step {
            try await grant(lease, verification: verification, app: app, evidence: evidence, report: report, now: now())
        }
        return .finishedByHandler
    }

    /// The locally verified receipt, as the application layer reads it.
    static func local(_ receipt: AppReceipt) -> RunReceiptAttempt.LocalReceipt {
        RunReceiptAttempt.LocalReceipt(
            bundleId: receipt.bundleId, environment: receipt.environment == .production ? .production : .sandbox,
            purchases: receipt.inAppPurchases.map {
                .init(
                    productId: $0.productId, transactionId: $0.transactionId, originalTransactionId: $0.originalTransactionId,
                    purchaseDate: $0.purchaseDate, expiresDate: $0.expiresDate, cancellationDate: $0.cancellationDate)
            })
    }
}

extension GrantResult {
    var outcomeLabel: String {
        switch self {
        case .granted: "verified"
        case .rejected: "invalid"
        case .leaseLost: "lease_lost"
        case .refused: "refused"
        case .waiting: "waiting"
        }
    }
}
