public import Foundation

/// The binding rule: an original transaction belongs to one app user. Unbound, it is bound to
/// this user (the claim rule has already made a later submitter wait); bound to another user,
/// `refuse` reports a conflict and grants nothing, `transfer` moves it and what it grants.
public enum BindingRule {
    /// Records the binding, transfer or conflict `tx` causes in `plan`; false when `tx` is not
    /// granted to this user (a conflict).
    public static func bind(
        _ tx: PurchaseEvidence.Purchase, context: GrantContext, bindings: inout [String: OwnershipBinding], plan: inout GrantPlan
    ) -> Bool {
        guard let binding = bindings[tx.originalTransactionId] else {
            let binding = OwnershipBinding(
                appId: context.appId, originalTransactionId: tx.originalTransactionId, appUserId: context.appUserId, productId: tx.productId)
            bindings[tx.originalTransactionId] = binding
            plan.bindings.append(binding)
            return true
        }
        guard !binding.appUserId.isSameIdentifier(as: context.appUserId) else { return true }
        switch context.bindingPolicy {
        case .refuse:
            if !plan.summary.conflicts.contains(where: { $0.transactionId == tx.transactionId }) {
                plan.summary.conflicts.append(
                    GrantConflict(
                        code: GrantConflict.ownedByAnotherUser, transactionId: tx.transactionId,
                        originalTransactionId: tx.originalTransactionId, productId: tx.productId))
            }
            return false
        case .transfer:
            let transfer = OwnershipTransfer(
                originalTransactionId: tx.originalTransactionId, fromAppUserId: binding.appUserId, toAppUserId: context.appUserId)
            plan.transfers.append(transfer)
            plan.summary.transfers.append(transfer)
            let moved = OwnershipBinding(
                appId: context.appId, originalTransactionId: tx.originalTransactionId, appUserId: context.appUserId,
                productId: binding.productId)
            bindings[tx.originalTransactionId] = moved
            plan.bindings.append(moved)
            return true
        }
    }
}

/// The refund and reversal rule for a transaction already granted: evidence showing a refund
/// revokes it, unless a reversal signed later already stands; a REFUND_REVERSED undoes a
/// recorded refund (and is remembered when the refund has not arrived yet, since it may arrive
/// late), and so does a copy Apple stated as current after the refund that no longer shows it
/// (the Server API's history, verifyReceipt's `latest_receipt_info`). Ordered by when Apple
/// stated the evidence, not by when it arrived.
public enum RefundRule {
    public enum Change: Sendable, Hashable {
        /// Nothing changes: already granted as shown.
        case none
        /// A refund signed before its reversal, delivered late: the reversal stands.
        case staleRefund
        case revoke(TransactionRecord)
        /// Reinstated; `wasRevoked` false when the refund itself has not been recorded yet.
        case reinstate(TransactionRecord, wasRevoked: Bool)
    }

    public static func change(
        _ existing: TransactionRecord, seen tx: PurchaseEvidence.Purchase, evidenceAt: Date, reversesRefunds: Bool
    ) -> Change {
        var record = existing
        if existing.cancellationDate == nil, let cancelled = tx.cancellationDate {
            if let reinstated = existing.reinstatedAt, evidenceAt <= reinstated { return .staleRefund }
            record.cancellationDate = cancelled
            record.revocationType = tx.revocationType
            record.revocationPercentage = tx.revocationPercentage
            return .revoke(record)
        }
        // A current copy (stated after the recorded refund) that no longer shows it: reversed.
        let statedAfterRefund = tx.currentAt.map { at in existing.cancellationDate.map { $0 < at } ?? false } ?? false
        let reversedAt = reversesRefunds ? evidenceAt : tx.currentAt ?? evidenceAt
        if reversesRefunds || statedAfterRefund, tx.cancellationDate == nil, (existing.reinstatedAt ?? .distantPast) < reversedAt {
            record.cancellationDate = nil
            record.revocationType = nil
            record.revocationPercentage = nil
            record.reinstatedAt = reversedAt
            return .reinstate(record, wasRevoked: existing.cancellationDate != nil)
        }
        return .none
    }
}

/// The subscription facts rule: the latest transaction of an original transaction (by expiry,
/// then purchase) and its renewal info become the subscription's facts; an older answer
/// processed late never moves an expiry back, and unchanged facts are not written again.
public enum SubscriptionFactsRule {
    /// The facts to write, or nil (none to write). `refundStands(id)`: the refund date already
    /// recorded for a transaction that this evidence does not reverse; `refundIsStale(id)`: the
    /// evidence's own refund was signed before a reversal that stands.
    public static func facts(
        _ originalId: String, purchases: [PurchaseEvidence.Purchase], owner: String, evidence: PurchaseEvidence, context: GrantContext,
        refundStands: (String) -> Date?, refundIsStale: (String) -> Bool
    ) -> SubscriptionFacts? {
        guard
            let latest = purchases.max(by: { a, b in
                (a.expiresDate ?? .distantPast, a.purchaseDate) < (b.expiresDate ?? .distantPast, b.purchaseDate)
            })
        else { return nil }
        let stored = context.subscriptions[originalId]
        var renewal = evidence.renewals[originalId]
        // Notifications come in any order: a renewal info signed before the one the stored facts
        // hold does not replace it (the transaction fields still do, by the rules below).
        if let incoming = renewal?.signedAt, let stored, let storedAt = stored.renewalSignedAt, incoming < storedAt {
            renewal = PurchaseEvidence.Renewal(
                autoRenewEnabled: stored.autoRenewEnabled, autoRenewProductId: stored.autoRenewProductId, inBillingRetry: stored.inBillingRetry,
                gracePeriodExpiresDate: stored.gracePeriodExpiresDate, expirationIntent: stored.expirationIntent, signedAt: storedAt,
                winBackOfferIds: stored.winBackOfferIds)
            renewal?.priceIncreaseStatus = stored.priceIncreaseStatus
        }
        var facts = SubscriptionFacts(
            appId: context.appId, originalTransactionId: originalId, appUserId: owner, productId: latest.productId,
            environment: evidence.environment, latestTransactionId: latest.transactionId, expiresDate: latest.expiresDate,
            revokedAt: (refundIsStale(latest.transactionId) ? nil : latest.cancellationDate) ?? refundStands(latest.transactionId),
            autoRenewEnabled: renewal?.autoRenewEnabled, autoRenewProductId: renewal?.autoRenewProductId,
            inBillingRetry: renewal?.inBillingRetry ?? false, gracePeriodExpiresDate: renewal?.gracePeriodExpiresDate,
            expirationIntent: renewal?.expirationIntent, updatedAt: context.now)
        facts.renewalSignedAt = renewal?.signedAt
        facts.winBackOfferIds = renewal?.winBackOfferIds
        facts.priceIncreaseStatus = renewal?.priceIncreaseStatus
        if let stored, let storedExpiry = stored.expiresDate, let newExpiry = facts.expiresDate,
            newExpiry < storedExpiry, stored.appUserId.isSameIdentifier(as: owner)
        {
            return nil
        }
        return context.subscriptions[originalId] == facts ? nil : facts
    }
}
