public import Foundation
public import Persistence
public import StorekeeperDomain

/// Existing customers brought in (docs/IMPORT.md): each row becomes a submission of its own, a
/// durable verification job like any purchase posted, so it is verified, granted once, evented,
/// retried after Apple's failures and resumed after a crash by the same machinery. A transaction
/// id becomes a pull of its history through the App Store Server API; a receipt or a signed
/// transaction is verified as if posted. The same row imported again finds its verification and
/// changes nothing.
public struct ImportCustomers: Sendable {
    let store: any SubmissionTransactions

    public init(store: any SubmissionTransactions) {
        self.store = store
    }

    /// Marks a verification as an import's, for support and the report.
    public static let hint = "import"

    /// The submission an id row makes: its history read through the Server API. The key is the
    /// row's own (`ImportRow.key`, hashed by the caller), so a second run finds the first's.
    public static func historyPull(_ row: ImportRow, appId: String, evidenceHash: String) -> EvidenceSubmission? {
        switch row.evidence {
        case .originalTransactionId(let id):
            // The customer's claim on the purchase, in acceptance order like a posted one.
            return EvidenceSubmission(
                appId: appId, appUserId: row.appUserId, evidenceHash: evidenceHash, evidence: .historyPull(transactionIds: [id]),
                hints: [hint: "original_transaction_id"], claims: [id])
        case .transactionId(let id):
            return EvidenceSubmission(
                appId: appId, appUserId: row.appUserId, evidenceHash: evidenceHash, evidence: .historyPull(transactionIds: [id]),
                hints: [hint: "transaction_id"])
        case .receipt, .signedTransaction:
            return nil
        }
    }

    public func callAsFunction(_ submission: EvidenceSubmission, now: Date) async throws -> SubmissionResult {
        var submission = submission
        if submission.hints[Self.hint] == nil { submission.hints[Self.hint] = "evidence" }
        return try await SubmitEvidence(store: store)(submission, now: now)
    }
}
