import AppStoreModels
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// The last step every verification job shares once an answer is verified (verifyReceipt, a
/// signed transaction or notification, the Server API): grant against the stored catalog in
/// the transaction that completes the job (`VerificationAttempts.grant`), count what happened.
struct VerifiedGrant {
    let attempts: VerificationAttempts
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry

    /// `evidenceSignedAt` / `reversesRefunds`: see `GrantContext`.
    @discardableResult
    func complete(
        _ lease: JobLease, verification: VerificationRecord, app: AppConfiguration, evidence: PurchaseEvidence,
        report: AttemptReport, evidenceSignedAt: Date? = nil, reversesRefunds: Bool = false,
        now: Date
    ) async throws -> GrantResult {
        let result = try await attempts.grant(
            lease, verificationId: verification.id, evidence: evidence, report: report,
            request: GrantRequest(
                appId: app.id, bundleId: app.bundleId, bindingPolicy: configuration.bindingPolicy, catalog: [:],
                evidenceSignedAt: evidenceSignedAt, reversesRefunds: reversesRefunds,
                // An earlier submitter usually ends within seconds; never wait longer than a minute.
                waitRetryAt: now.addingTimeInterval(
                    min(60, configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))))),
            now: now)
        if case .granted(let summary) = result {
            metrics.increment(Metric.grantsTotal, by: Double(summary.granted.count))
            metrics.increment(Metric.grantConflictsTotal, by: Double(summary.conflicts.count))
            metrics.increment(Metric.refundsTotal, by: Double(summary.revoked.count))
        }
        if case .waiting = result {
            metrics.increment(Metric.verificationClaimWaitsTotal)
        } else {
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": result.outcomeLabel])
        }
        return result
    }
}
