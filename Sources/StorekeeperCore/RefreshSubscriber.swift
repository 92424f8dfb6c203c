public import Foundation
public import Persistence
public import StorekeeperDomain

/// An operator's "ask Apple again" for one user: the history of every original transaction the
/// user is known to hold is pulled through the App Store Server API, as a submission of its own
/// (so it is verified, granted and evented like any other, and waited on the same way). Only
/// purchases already bound to the user are asked about: a refresh cannot claim anyone else's.
public struct RefreshSubscriber: Sendable {
    public typealias Store = LedgerStore & SubmissionTransactions

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// Nil when nothing of the user is known (nothing to ask Apple about). With `actor`, the
    /// refresh is in the audit log (`subscriber_refreshed`, its verification as subject), written
    /// in the transaction that accepts it.
    public func callAsFunction(appId: String, appUserId: String, actor: AuditActor? = nil, now: Date) async throws -> SubmissionResult? {
        var ids: [String] = []
        for tx in try await store.transactions(appId: appId, appUserId: appUserId) where !ids.contains(tx.originalTransactionId) {
            ids.append(tx.originalTransactionId)
        }
        guard !ids.isEmpty else { return nil }
        var submission = EvidenceSubmission(
            appId: appId, appUserId: appUserId, evidenceHash: "refresh-\(UUID().uuidString)", evidence: .historyPull(transactionIds: ids))
        submission.audit = actor.map {
            AuditEntry(
                id: AuditEntry.freshId(), appId: appId, at: now, actor: $0.name, action: "subscriber_refreshed", appUserId: appUserId,
                reason: $0.reason, subject: ""
            ).attributed(to: $0)
        }
        return try await SubmitEvidence(store: store)(submission, now: now)
    }
}
