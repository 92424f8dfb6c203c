import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// The one way a storage failure ends a verification run: nothing partial is committed (each
/// write is one transaction), so the job is simply tried again later.
enum VerificationJobStart {
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
/// its app the same way (`VerificationAttempts.begin`), and a storage error reschedules it the
/// same way; only `verify` differs.
protocol VerificationJobHandler: ReleasingJobHandler {
    var attempts: VerificationAttempts { get }
    var apps: [String: AppConfiguration] { get }
    var configuration: StorekeeperConfiguration { get }
    var logger: Logger { get }
    var now: @Sendable () -> Date { get }

    /// The kind's own work on the submitted `data` (a receipt, a JWS, transaction ids).
    func verify(_ lease: JobLease, verification: VerificationRecord, data: String, app: AppConfiguration) async throws -> JobOutcome
}

extension VerificationJobHandler {
    /// How an attempt ends, written once over the store's transaction port.
    var outcomes: VerificationOutcomes { attempts.outcomes }

    /// A verification job's payload is its verification's id.
    func release(_ lease: JobLease, now: Date) async throws -> Bool {
        try await outcomes.release(lease, verificationId: lease.payload, now: now)
    }

    func run(_ lease: JobLease) async -> JobOutcome {
        await VerificationJobStart.retryingOnFailure(lease, configuration: configuration, logger: logger, now: now()) {
            switch try await attempts.begin(lease, isConfigured: { apps[$0] != nil }, now: now()) {
            case .done(let outcome): return outcome
            case .proceed(let record, let data):
                guard let app = apps[record.appId] else { return .finishedByHandler }  // Checked by `begin`.
                return try await verify(lease, verification: record, data: data, app: app)
            }
        }
    }
}
