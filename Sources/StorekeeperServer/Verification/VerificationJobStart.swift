import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// The steps every verification job (receipt or signed transaction) takes before its own work,
/// and the one way a storage failure ends a run: nothing partial is committed (each write is
/// one transaction), so the job is simply tried again later.
enum VerificationJobStart {
    case proceed(VerificationRecord, data: String, app: AppConfiguration)
    /// Nothing more to do in this run.
    case done(JobOutcome)

    /// Loads the verification and what was submitted, marks it as being verified under this
    /// lease, and finds its app (an app no longer configured holds the job).
    static func begin(
        _ lease: JobLease, store: any VerificationJobStore, apps: [String: AppConfiguration], now: Date
    ) async throws -> VerificationJobStart {
        guard let (verification, data) = try await store.verificationForJob(jobId: lease.jobId) else {
            return .done(.discard(reason: FailureReason.verificationMissing.rawValue))
        }
        let outcomes = VerificationOutcomes(store: store)
        guard try await outcomes.markVerifying(lease, verificationId: verification.id, now: now) else {
            return .done(.finishedByHandler)  // Another runner holds it now.
        }
        guard let app = apps[verification.appId] else {
            let report = AttemptReport(statuses: [], environment: nil, reason: .appNotConfigured)
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verification.id, report: report, configurationFingerprint: "", now: now)
            return .done(.finishedByHandler)
        }
        return .proceed(verification, data: data, app: app)
    }

    /// Runs `body`; a thrown (storage) error reschedules the job with the configured backoff.
    static func retryingOnFailure(
        _ lease: JobLease, configuration: StorekeeperConfiguration, logger: Logger, now: Date,
        _ body: () async throws -> JobOutcome
    ) async -> JobOutcome {
        do {
            return try await body()
        } catch {
            logger.error("verification job failed", metadata: ["job": "\(lease.jobId)", "kind": "\(lease.kind)", "error": "\(error)"])
            let delay = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
            return .retry(at: now.addingTimeInterval(delay), reason: FailureReason.storageError.rawValue)
        }
    }
}

/// A job that establishes one verification: every kind loads it, marks it verifying and finds
/// its app the same way (`VerificationJobStart`), and a storage error reschedules it the same
/// way; only `verify` differs.
protocol VerificationJobHandler: ReleasingJobHandler {
    var store: any VerificationJobStore { get }
    var apps: [String: AppConfiguration] { get }
    var configuration: StorekeeperConfiguration { get }
    var logger: Logger { get }
    var now: @Sendable () -> Date { get }

    /// The kind's own work on the submitted `data` (a receipt, a JWS, transaction ids).
    func verify(_ lease: JobLease, verification: VerificationRecord, data: String, app: AppConfiguration) async throws -> JobOutcome
}

extension VerificationJobHandler {
    /// How an attempt ends, written once over the store's transaction port.
    var outcomes: VerificationOutcomes { VerificationOutcomes(store: store) }

    /// A verification job's payload is its verification's id.
    func release(_ lease: JobLease, now: Date) async throws -> Bool {
        try await outcomes.release(lease, verificationId: lease.payload, now: now)
    }

    func run(_ lease: JobLease) async -> JobOutcome {
        await VerificationJobStart.retryingOnFailure(lease, configuration: configuration, logger: logger, now: now()) {
            switch try await VerificationJobStart.begin(lease, store: store, apps: apps, now: now()) {
            case .done(let outcome): return outcome
            case .proceed(let record, let data, let app): return try await verify(lease, verification: record, data: data, app: app)
            }
        }
    }
}
