public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// What every verification job (receipt, signed transaction, Server API refresh) reads and
/// writes, whatever its kind: the start of an attempt, the app's catalog provisional access is
/// planned from, and the outcomes (`VerificationOutcomes`). A job
/// handler holds this, never a store, so the kinds cannot drift apart in how they begin or end.
public struct VerificationAttempts: Sendable {
    public typealias Store = VerificationJobStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// How each attempt ends, in one transaction each.
    public var outcomes: VerificationOutcomes { VerificationOutcomes(store: store) }

    public enum Start<App: Sendable>: Sendable {
        /// The attempt runs: the verification (now verifying under this lease), what was
        /// submitted, and its app's configuration.
        case proceed(VerificationRecord, evidence: String, app: App)
        /// Nothing more to do in this run (already written in the start's transaction).
        case done
    }

    /// Starts an attempt in one transaction: reads the verification and what was submitted and
    /// marks it verifying under `lease`. An app not in `apps` (no longer configured) holds it
    /// for the operator; a verification gone discards the job; a lease another runner holds
    /// now, or a state no attempt may start from, ends this run.
    public func begin<App: Sendable>(_ lease: JobLease, apps: [String: App], now: Date) async throws -> Start<App> {
        try await store.withLease(lease, verificationId: lease.payload, reading: .submission, now: now) {
            verification, facts -> LeasedDecision<Start<App>> in
            guard let verification, let submitted = facts.submission else {
                let gone = JobLifecycle.ending(.discarded(reason: FailureReason.verificationMissing.rawValue))
                return LeasedDecision(writes: [.job(gone)], result: .done)
            }
            guard let app = apps[verification.appId] else {
                let report = AttemptReport(statuses: [], environment: nil, reason: .appNotConfigured)
                guard let (from, to) = VerificationOutcomes.ending(verification, on: .appleConfigurationError) else {
                    return VerificationOutcomes.refusal(verification, result: .done)
                }
                let held = VerificationChange(
                    id: verification.id, from: from, to: to, attempts: lease.attempt, report: report, configurationFingerprint: "")
                let job = JobLifecycle.ending(.held(reason: FailureReason.appNotConfigured.rawValue))
                return LeasedDecision(writes: [.job(job), .verification(held)], result: .done)
            }
            guard let next = VerificationLifecycle.next(from: verification.state, on: .leased) else {
                return VerificationOutcomes.refusal(verification, result: .done)
            }
            var record = submitted.record
            (record.state, record.attempts) = (next, lease.attempt)
            let change = VerificationChange(id: verification.id, from: verification.state, to: next, attempts: lease.attempt)
            return LeasedDecision(writes: [.verification(change)], result: .proceed(record, evidence: submitted.evidence, app: app))
        } ?? .done
    }

    /// The app's catalog by product id, as grants and provisional access are planned from it.
    public func catalog(appId: String) async throws -> [String: Product] {
        Dictionary(try await store.products(appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
    }

    /// Grants verified evidence against the app's catalog as stored in the transaction that
    /// completes the job: the last step every kind shares.
    public func grant(
        _ lease: JobLease, verificationId: String, evidence: PurchaseEvidence, report: AttemptReport, request: GrantRequest, now: Date
    ) async throws -> GrantResult {
        try await outcomes.completeVerified(lease, verificationId: verificationId, evidence: evidence, report: report, request: request, now: now)
    }
}
