import AppStoreModels
import Foundation
import JobQueue
import StorekeeperDomain

/// The storage port of the server. Each method that changes money-relevant state is one
/// database transaction; methods taking a `JobLease` write nothing unless the lease is still held.
public protocol StorekeeperStore: JobStore {
    // MARK: Catalog
    func products(appId: String) async throws -> [Product]
    func product(appId: String, productId: String) async throws -> Product?
    /// Inserts catalog entries that are not stored yet; stored ones (maybe edited) are kept.
    func seedProducts(appId: String, products: [Product], now: Date) async throws
    func upsertProduct(appId: String, product: Product, now: Date) async throws
    func deleteProduct(appId: String, productId: String) async throws -> Bool

    // MARK: Verifications
    /// Stores the receipt (deduplicated by hash), a verification and its job in one transaction.
    func submitReceipt(_ submission: ReceiptSubmission, now: Date) async throws -> SubmissionResult
    func verification(id: String) async throws -> VerificationRecord?
    func verifications(appId: String?, states: [VerificationState], createdBefore: Date?, limit: Int) async throws -> [VerificationRecord]
    /// The verification a job is about and its receipt, for the job handler.
    func verificationForJob(jobId: String) async throws -> (VerificationRecord, receiptBase64: String)?

    /// Marks the verification as being verified by this lease.
    func markVerifying(_ lease: JobLease, verificationId: String, now: Date) async throws -> Bool
    /// Grants, writes the ledger, finishes the verification and completes the job: one transaction.
    func completeVerified(
        _ lease: JobLease, verificationId: String, response: VerifyReceiptResponse, environment: AppStoreEnvironment,
        report: AttemptReport, request: GrantRequest, now: Date
    ) async throws -> GrantResult
    /// Marks invalid and completes the job.
    func finishInvalid(_ lease: JobLease, verificationId: String, report: AttemptReport, now: Date) async throws -> Bool
    /// Schedules the next attempt: the job becomes available at `at`.
    func scheduleRetry(_ lease: JobLease, verificationId: String, report: AttemptReport, at: Date, now: Date) async throws -> Bool
    /// Parks the job until the app's configuration changes (its fingerprint differs).
    func holdForConfiguration(
        _ lease: JobLease, verificationId: String, report: AttemptReport, configurationFingerprint: String, now: Date
    ) async throws -> Bool
    /// Schedules the next attempt like `scheduleRetry` and, in the same transaction, records
    /// provisional grants for the verification (the outage policy). Apple's answer later removes
    /// them in the transaction that grants (`completeVerified`) or refuses (`finishInvalid`).
    func scheduleRetryGrantingProvisionally(
        _ lease: JobLease, verificationId: String, report: AttemptReport, at: Date, grants: [ProvisionalGrant], now: Date
    ) async throws -> Bool
    /// Provisional grants of a user still running at `now`.
    func provisionalGrants(appId: String, appUserId: String, now: Date) async throws -> [ProvisionalGrant]
    /// Puts a verification back in the queue now (manual retry); false if it is being verified.
    func requeue(verificationId: String, now: Date) async throws -> Bool
    /// Releases configuration holds of `appId` taken under another configuration fingerprint.
    func releaseConfigurationHolds(appId: String, currentFingerprint: String, now: Date) async throws -> Int

    // MARK: Server notifications
    /// Who owns an original transaction (the app user it is bound to), if anyone yet.
    func owner(appId: String, originalTransactionId: String) async throws -> String?
    /// Stores a verified App Store Server Notification once per (app, notificationUUID) and, in
    /// the same transaction, the submission it causes (its signed transaction, for the owner).
    /// A notification already stored changes nothing and returns `created == false`.
    func recordNotification(
        _ notification: NotificationRecord, submission: ReceiptSubmission?, now: Date
    ) async throws
        -> NotificationResult

    // MARK: Subscribers and ledger
    func transactions(appId: String, appUserId: String) async throws -> [TransactionRecord]
    func subscriptions(appId: String, appUserId: String) async throws -> [SubscriptionFacts]
    func ledger(_ query: LedgerQuery) async throws -> [LedgerEntry]

    // MARK: Operations
    func verificationCounts() async throws -> [VerificationState: Int]
    /// Verifications in `states` created before `createdBefore` (the operator's "flagged" list).
    func countVerifications(states: [VerificationState], createdBefore: Date) async throws -> Int
    func countTransactions(appId: String?) async throws -> Int
}
