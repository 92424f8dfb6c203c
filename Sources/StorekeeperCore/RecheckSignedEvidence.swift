public import AppStoreModels
public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// A stored StoreKit 2 signed transaction or V2 notification read again against the app as
/// configured now (its signatures were verified when it arrived, and nothing else is stored as
/// the job's evidence). The server's adapter is its `SignedTransactionGate`.
public protocol SignedEvidenceChecking: Sendable {
    func check(_ jws: String, now: Date) async -> SignedEvidenceCheck
}

public enum SignedEvidenceCheck: Sendable {
    /// `signedAt`: when Apple signed what says so (a refund and its reversal are ordered by it);
    /// `reversesRefunds`: a REFUND_REVERSED notification.
    case verified(PurchaseEvidence, environment: AppStoreEnvironment, signedAt: Date?, reversesRefunds: Bool)
    /// Readable but not to be granted: the first failure's stable code.
    case rejected(FailureReason)
}

/// Grants one StoreKit 2 signed transaction or V2 notification, verified when it arrived (no
/// Apple call): what still holds is handed back to be granted through the same planner, ledger
/// and exactly-once keys as receipts, in the transaction that completes the job; what no longer
/// does ends the verification as invalid here.
public struct RecheckSignedEvidence: Sendable {
    public enum Step: Sendable {
        case grant(PurchaseEvidence, report: AttemptReport, signedAt: Date?, reversesRefunds: Bool)
        case invalid
    }

    let outcomes: VerificationOutcomes

    public init(outcomes: VerificationOutcomes) {
        self.outcomes = outcomes
    }

    public func callAsFunction(
        _ lease: JobLease, verificationId: String, evidence jws: String, checker: any SignedEvidenceChecking, now: Date
    )
        async throws -> Step
    {
        switch await checker.check(jws, now: now) {
        case .rejected(let reason):
            let report = AttemptReport(statuses: [], environment: nil, reason: reason)
            _ = try await outcomes.finishInvalid(lease, verificationId: verificationId, report: report, now: now)
            return .invalid
        case .verified(let evidence, let environment, let signedAt, let reversesRefunds):
            let report = AttemptReport(statuses: [], environment: environment.storageName, reason: nil)
            return .grant(evidence, report: report, signedAt: signedAt, reversesRefunds: reversesRefunds)
        }
    }
}
