import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// A job that establishes one verification: every kind starts it the same way
/// (`VerificationOutcomes.begin`, one transaction), grants a verified answer the same way
/// (`grant`), and a storage error reschedules it the same way; only `verify` differs.
protocol VerificationJobHandler: ReleasingJobHandler {
    var outcomes: VerificationOutcomes { get }
    var apps: [String: AppConfiguration] { get }
    var configuration: StorekeeperConfiguration { get }
    var metrics: MetricsRegistry { get }
    var logger: Logger { get }
    var now: @Sendable () -> Date { get }

    /// The kind's own work on the submitted `data` (a receipt, a JWS, transaction ids).
    func verify(_ lease: JobLease, verification: VerificationRecord, data: String, app: AppConfiguration) async throws -> JobOutcome
}

extension VerificationJobHandler {
    /// A verification job's payload is its verification's id.
    func release(_ lease: JobLease, now: Date) async throws -> Bool {
        try await outcomes.release(lease, verificationId: lease.payload, now: now)
    }

    /// A thrown (storage) error reschedules the job with the configured backoff: nothing
    /// partial was committed (each write is one transaction), so it is simply tried again.
    func run(_ lease: JobLease) async -> JobOutcome {
        do {
            switch try await outcomes.begin(lease, apps: apps, now: now()) {
            case .done: return .finishedByHandler
            case .proceed(let record, let data, let app): return try await verify(lease, verification: record, data: data, app: app)
            }
        } catch {
            logger.error("verification job failed", metadata: ["job": "\(lease.jobId)", "kind": "\(lease.kind)", "error": "\(error)"])
            let delay = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
            return .retry(at: now().addingTimeInterval(delay), reason: FailureReason.storageError.rawValue)
        }
    }

    /// The last step every kind shares once an answer is verified (verifyReceipt, a signed
    /// transaction or notification, the Server API): grant against the catalog as stored in the
    /// transaction that completes the job, and count what happened.
    /// `evidenceSignedAt` / `reversesRefunds`: see `GrantContext`.
    @discardableResult
    func grant(
        _ lease: JobLease, verification: VerificationRecord, app: AppConfiguration, evidence: PurchaseEvidence, report: AttemptReport,
        evidenceSignedAt: Date? = nil, reversesRefunds: Bool = false, now: Date
    ) async throws -> GrantResult {
        let request = GrantRequest(
            appId: app.id, bundleId: app.bundleId, bindingPolicy: configuration.bindingPolicy, evidenceSignedAt: evidenceSignedAt,
            reversesRefunds: reversesRefunds,
            // An earlier submitter usually ends within seconds; never wait longer than a minute.
            waitRetryAt: now.addingTimeInterval(
                min(60, configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1)))),
            commission: app.commission)
        let result = try await outcomes.completeVerified(
            lease, verificationId: verification.id, evidence: evidence, report: report, request: request, now: now)
        if case .granted(let summary) = result {
            metrics.increment(Metric.grantsTotal, by: summary.granted.count)
            metrics.increment(Metric.grantConflictsTotal, by: summary.conflicts.count)
            metrics.increment(Metric.refundsTotal, by: summary.revoked.count)
        }
        if case .waiting = result {
            metrics.increment(Metric.verificationClaimWaitsTotal)
        } else {
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": result.outcomeLabel])
        }
        return result
    }
}
