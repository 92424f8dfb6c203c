public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// What every verification job (receipt, signed transaction, Server API refresh) reads and
/// writes, whatever its kind: the start of an attempt, the app's catalog its grants and
/// provisional access are planned from, and the outcomes (`VerificationOutcomes`). A job
/// handler holds this, never a store, so the kinds cannot drift apart in how they begin or end.
public struct VerificationAttempts: Sendable {
    public typealias Store = VerificationJobStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// How each attempt ends, in one transaction each.
    public var outcomes: VerificationOutcomes { VerificationOutcomes(store: store) }

    public enum Start: Sendable {
        /// The attempt runs: the verification (now verifying under this lease) and what was submitted.
        case proceed(VerificationRecord, evidence: String)
        /// Nothing more to do in this run.
        case done(JobOutcome)
    }

    /// Loads the verification and what was submitted and marks it verifying under `lease`. An
    /// app no longer configured (`isConfigured` false) holds it for the operator; a verification
    /// gone discards the job; one another runner holds now is left to it.
    public func begin(_ lease: JobLease, isConfigured: (String) -> Bool, now: Date) async throws -> Start {
        guard let (verification, evidence) = try await store.verificationForJob(jobId: lease.jobId) else {
            return .done(.discard(reason: FailureReason.verificationMissing.rawValue))
        }
        guard try await outcomes.markVerifying(lease, verificationId: verification.id, now: now) else {
            return .done(.finishedByHandler)
        }
        guard isConfigured(verification.appId) else {
            let report = AttemptReport(statuses: [], environment: nil, reason: .appNotConfigured)
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verification.id, report: report, configurationFingerprint: "", now: now)
            return .done(.finishedByHandler)
        }
        return .proceed(verification, evidence: evidence)
    }

    /// The app's catalog by product id, as grants and provisional access are planned from it.
    public func catalog(appId: String) async throws -> [String: Product] {
        Dictionary(try await store.products(appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
    }

    /// Grants verified evidence against the app's catalog as stored now (`request.catalog` is
    /// replaced by it): the last step every kind shares.
    public func grant(
        _ lease: JobLease, verificationId: String, evidence: PurchaseEvidence, report: AttemptReport, request: GrantRequest, now: Date
    ) async throws -> GrantResult {
        var request = request
        request.catalog = try await catalog(appId: request.appId)
        return try await outcomes.completeVerified(
            lease, verificationId: verificationId, evidence: evidence, report: report, request: request, now: now)
    }
}
