import AppStoreClient
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorageSQLite
import StorekeeperDomain

/// Verifies one receipt with Apple per lease: production first, following 21007/21008, then
/// records the outcome. A verified receipt is granted in the same transaction that completes
/// the job; every other outcome reschedules, holds or ends the job in one transaction too.
struct VerifyReceiptJobHandler: JobHandler {
    let kind = verifyReceiptJobKind
    let store: any StorekeeperStore
    let client: VerifyReceiptClient
    let gate: ReceiptGate?
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func run(_ lease: JobLease) async -> JobOutcome {
        await VerificationJobStart.retryingOnFailure(lease, configuration: configuration, logger: logger, now: now()) {
            try await verify(lease)
        }
    }

    private func verify(_ lease: JobLease) async throws -> JobOutcome {
        let (verification, receipt, app): (VerificationRecord, String, AppConfiguration)
        switch try await VerificationJobStart.begin(lease, store: store, apps: apps, now: now()) {
        case .done(let outcome): return outcome
        case .proceed(let record, let data, let configured): (verification, receipt, app) = (record, data, configured)
        }

        if let reason = await gate?.rejection(receipt) {
            // Forged or untrusted: decided locally, Apple never sees it.
            let report = AttemptReport(statuses: [], environment: nil, reason: reason)
            _ = try await store.finishInvalid(lease, verificationId: verification.id, report: report, now: now())
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": "invalid"])
            metrics.increment("storekeeper_receipts_rejected_locally_total", labels: ["reason": reason])
            return .finishedByHandler
        }
        let request = VerifyReceiptRequest(
            receiptData: receipt, password: app.sharedSecret, excludeOldTransactions: configuration.excludeOldTransactions)
        var environment = AppStoreRouting.firstEnvironment
        var statuses: [Int] = []
        var classification = AttemptClassification.transient(reason: "apple_not_called", status: nil)
        for _ in 0..<AppStoreRouting.maximumHops {
            let started = ContinuousClock.now
            let result = await client.verify(request, environment: environment, timeout: configuration.attemptTimeoutSeconds)
            let elapsed = started.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            classification = AttemptClassification.classify(result, environment: environment)
            record(result: result, classification: classification, environment: environment, seconds: seconds)
            if let status = classification.appleStatus { statuses.append(status.rawValue) }
            guard case .redirect(let next, _) = classification else { break }
            environment = next
        }

        let at = now()
        switch classification {
        case .verified(let response):
            var report = AttemptReport(statuses: statuses, environment: environment.storageName, reason: nil)
            if environment == .sandbox, !app.acceptSandbox {
                report.reason = "sandbox_not_accepted"
                _ = try await store.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
                return .finishedByHandler
            }
            let catalog = Dictionary(
                try await store.products(appId: app.id).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
            let result = try await store.completeVerified(
                lease, verificationId: verification.id, response: response, environment: environment, report: report,
                request: GrantRequest(appId: app.id, bundleId: app.bundleId, bindingPolicy: configuration.bindingPolicy, catalog: catalog),
                now: at)
            if case .granted(let summary) = result {
                metrics.increment("storekeeper_grants_total", by: Double(summary.granted.count))
                metrics.increment("storekeeper_grant_conflicts_total", by: Double(summary.conflicts.count))
                metrics.increment("storekeeper_refunds_total", by: Double(summary.revoked.count))
            }
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": result.outcomeLabel])
        case .invalid(let reason, _):
            let report = AttemptReport(statuses: statuses, environment: environment.storageName, reason: reason)
            _ = try await store.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": "invalid"])
        case .configurationError(let reason, _):
            logger.critical(
                "configuration error from Apple; verification held until the configuration changes",
                metadata: ["app": "\(app.id)", "reason": "\(reason)"])
            let report = AttemptReport(statuses: statuses, environment: environment.storageName, reason: reason)
            _ = try await store.holdForConfiguration(
                lease, verificationId: verification.id, report: report, configurationFingerprint: app.fingerprint, now: at)
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": "configuration_error"])
        case .transient, .redirect:
            // A redirect after the last hop means Apple sent us round in circles: transient.
            let reason = if case .transient(let reason, _) = classification { reason } else { "apple_environment_loop" }
            let delay = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
            let next = at.addingTimeInterval(delay)
            let report = AttemptReport(statuses: statuses, environment: nil, reason: reason)
            _ = try await store.scheduleRetry(lease, verificationId: verification.id, report: report, at: next, now: at)
            metrics.increment("storekeeper_verification_retries_total", labels: ["reason": reason])
        }
        return .finishedByHandler
    }

    private func record(result: VerifyReceiptCallResult, classification: AttemptClassification, environment: AppStoreEnvironment, seconds: Double) {
        let env = environment.storageName
        metrics.observe("storekeeper_apple_request_duration_seconds", labels: ["environment": env], value: seconds)
        let label: String =
            switch result {
            case .timedOut: "timeout"
            case .connectionFailed: "connection_failed"
            case .answered(let http, _):
                if let status = classification.appleStatus { String(status.rawValue) } else { "http_\(http)" }
            }
        metrics.increment("storekeeper_apple_responses_total", labels: ["environment": env, "status": label])
    }
}

extension AttemptClassification {
    var appleStatus: AppStoreStatus? {
        switch self {
        case .verified(let response): return response.status
        case .redirect(_, let status): return status
        case .invalid(_, let status), .transient(_, let status): return status
        case .configurationError(_, let status): return status
        }
    }
}

extension GrantResult {
    var outcomeLabel: String {
        switch self {
        case .granted: "verified"
        case .rejected: "invalid"
        case .leaseLost: "lease_lost"
        }
    }
}
