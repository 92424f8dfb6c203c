import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Runs one StoreKit 2 signed transaction's or V2 notification's job (`RecheckSignedEvidence`)
/// and grants what still holds the way every verification kind does. Usually done within
/// milliseconds of the POST, which waits for it.
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
        switch try await RecheckSignedEvidence(outcomes: outcomes)(
            lease, verificationId: verification.id, evidence: jws, checker: GateEvidenceChecker(gate: gate, app: app), now: at)
        {
        case .invalid:
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
        case .grant(let evidence, let report, let signedAt, let reversesRefunds):
            try await grant(
                lease, verification: verification, app: app, evidence: evidence, report: report, evidenceSignedAt: signedAt,
                reversesRefunds: reversesRefunds, now: at)
        }
        return .finishedByHandler
    }
}
