import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperDomain

/// Grants one StoreKit 2 signed transaction: verified locally (no Apple call), then granted
/// through the same planner, ledger and exactly-once keys as receipts, in the transaction that
/// completes the job. Usually done within milliseconds of the POST, which waits for it.
struct SignedTransactionJobHandler: JobHandler {
    let kind = verifySignedTransactionJobKind
    let store: any StorekeeperStore
    let gate: SignedTransactionGate
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func run(_ lease: JobLease) async -> JobOutcome {
        do {
            return try await grant(lease)
        } catch {
            logger.error("signed transaction job failed", metadata: ["job": "\(lease.jobId)", "error": "\(error)"])
            let delay = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
            return .retry(at: now().addingTimeInterval(delay), reason: "storage_error")
        }
    }

    private func grant(_ lease: JobLease) async throws -> JobOutcome {
        guard let (verification, jws) = try await store.verificationForJob(jobId: lease.jobId) else {
            return .discard(reason: "verification_missing")
        }
        guard try await store.markVerifying(lease, verificationId: verification.id, now: now()) else { return .finishedByHandler }
        guard let app = apps[verification.appId] else {
            let report = AttemptReport(statuses: [], environment: nil, reason: "app_not_configured")
            _ = try await store.holdForConfiguration(
                lease, verificationId: verification.id, report: report, configurationFingerprint: "", now: now())
            return .finishedByHandler
        }
        let at = now()
        let outcome: SignedTransactionGate.Outcome
        do {
            outcome = try await gate.check(jws, app: app, now: at)
        } catch {
            outcome = .rejected(code: "invalid_signed_transaction", message: "\(error)")
        }
        switch outcome {
        case .rejected(let code, _):
            let report = AttemptReport(statuses: [], environment: nil, reason: code)
            _ = try await store.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": "invalid"])
        case .verified(_, let response, let environment):
            let catalog = Dictionary(try await store.products(appId: app.id).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
            let report = AttemptReport(statuses: [], environment: environment.storageName, reason: nil)
            let result = try await store.completeVerified(
                lease, verificationId: verification.id, response: response, environment: environment, report: report,
                request: GrantRequest(appId: app.id, bundleId: app.bundleId, bindingPolicy: configuration.bindingPolicy, catalog: catalog),
                now: at)
            if case .granted(let summary) = result {
                metrics.increment("storekeeper_grants_total", by: Double(summary.granted.count))
            }
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": result.outcomeLabel])
        }
        return .finishedByHandler
    }
}
