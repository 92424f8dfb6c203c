import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Grants one StoreKit 2 signed transaction or V2 notification, verified when it arrived (no
/// Apple call), then granted
/// through the same planner, ledger and exactly-once keys as receipts, in the transaction that
/// completes the job. Usually done within milliseconds of the POST, which waits for it.
struct SignedTransactionJobHandler: VerificationJobHandler {
    let kind = verifySignedTransactionJobKind
    let outcomes: VerificationOutcomes
    let gate: SignedTransactionGate
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func verify(
        _ lease: JobLease, verification: VerificationRecord, data jws: String, app: AppConfiguration
    ) async throws -> JobOutcome {
        let at = now()
        let outcome: SignedTransactionGate.Outcome
        do {
            // Its signatures were verified when it was posted or sent (nothing else is stored as
            // this job's evidence); the reread checks its claims against the app as configured now.
            outcome = try await gate.check(jws, app: app, now: at, signatures: .verifiedAtAcceptance)
        } catch {
            outcome = .rejected(reason: .invalidSignedTransaction, message: (error as? StorekeeperError)?.message ?? "\(error)")
        }
        switch outcome {
        case .rejected(let reason, _):
            let report = AttemptReport(statuses: [], environment: nil, reason: reason)
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
        case .verified(let transaction, let evidence, let environment, let notification):
            // Refunds and their reversals are ordered by when Apple signed what says so.
            try await grant(
                lease, verification: verification, app: app, evidence: evidence,
                report: AttemptReport(statuses: [], environment: environment.storageName, reason: nil),
                evidenceSignedAt: notification?.signedDate?.date ?? transaction.signedDate?.date,
                reversesRefunds: notification?.notificationType == .refundReversed, now: at)
        }
        return .finishedByHandler
    }
}
