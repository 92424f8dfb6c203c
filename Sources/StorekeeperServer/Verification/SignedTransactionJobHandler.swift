import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperDomain

/// Grants one StoreKit 2 signed transaction: verified locally (no Apple call), then granted
/// through the same planner, ledger and exactly-once keys as receipts, in the transaction that
/// completes the job. Usually done within milliseconds of the POST, which waits for it.
struct SignedTransactionJobHandler: JobHandler {
    let kind = verifySignedTransactionJobKind
    let store: any StorekeeperStore
    let gate: SignedTransactionGate
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func run(_ lease: JobLease) async -> JobOutcome {
        await VerificationJobStart.retryingOnFailure(lease, configuration: configuration, logger: logger, now: now()) {
            try await grant(lease)
        }
    }

    private func grant(_ lease: JobLease) async throws -> JobOutcome {
        let (verification, jws, app): (VerificationRecord, String, AppConfiguration)
        switch try await VerificationJobStart.begin(lease, store: store, apps: apps, now: now()) {
        case .done(let outcome): return outcome
        case .proceed(let record, let data, let configured): (verification, jws, app) = (record, data, configured)
        }
        let at = now()
        let outcome: SignedTransactionGate.Outcome
        do {
            outcome = try await gate.check(jws, app: app, now: at)
        } catch {
            outcome = .rejected(code: "invalid_signed_transaction", message: "\(error)")
        }
        switch outcome {
        case .rejected(let code, _):
            let report = AttemptReport(statuses: [], environment: nil, reason: code)
            _ = try await store.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            metrics.increment("storekeeper_verifications_finished_total", labels: ["outcome": "invalid"])
        case .verified(let transaction, let response, let environment):
            // Refunds and their reversals are ordered by when Apple signed what says so.
            let notification = SignedTransactionGate.notificationHeader(jws)
            try await VerifiedGrant(store: store, configuration: configuration, metrics: metrics).complete(
                lease, verification: verification, app: app, response: response, environment: environment,
                report: AttemptReport(statuses: [], environment: environment.storageName, reason: nil),
                evidenceSignedAt: notification.map { $0.signedDate } ?? transaction.signedDate?.date,
                reversesRefunds: notification?.type == .refundReversed, now: at)
        }
        return .finishedByHandler
    }
}
