import Foundation
import JobQueue
import Logging
import Persistence

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
        _ lease: JobLease, store: any StorekeeperStore, apps: [String: AppConfiguration], now: Date
    ) async throws -> VerificationJobStart {
        guard let (verification, data) = try await store.verificationForJob(jobId: lease.jobId) else {
            return .done(.discard(reason: "verification_missing"))
        }
        guard try await store.markVerifying(lease, verificationId: verification.id, now: now) else {
            return .done(.finishedByHandler)  // Another runner holds it now.
        }
        guard let app = apps[verification.appId] else {
            let report = AttemptReport(statuses: [], environment: nil, reason: "app_not_configured")
            _ = try await store.holdForConfiguration(
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
            return .retry(at: now.addingTimeInterval(delay), reason: "storage_error")
        }
    }
}
