public import AppStoreModels
import Persistence
public import StorekeeperDomain

extension IngestNotification {
    /// What the edge verified of a V2 notification's signed transaction, if it carried one.
    public enum TransactionFact: Sendable, Hashable {
        /// Readable, but not to be granted (the first failure's stable code).
        case rejected(FailureReason)
        case verified(transactionId: String?, originalTransactionId: String?)
    }

    /// What a verified V2 notification leads to. Its signed transaction is granted to the owner
    /// of the original transaction through the same path as a StoreKit 2 POST (`evidenceHash`
    /// names the submission); a CONSUMPTION_REQUEST is recorded for an answer by the app's
    /// policy, nothing about the purchase changed yet; a rejected transaction is never granted;
    /// TEST, and a notification with no transaction, lead to nothing.
    public static func classify(
        type: NotificationType, transaction: TransactionFact?, consumptionRequestReason: String?, refundPolicy: RefundPolicy,
        signedPayload: String, evidenceHash: String
    ) -> (purchase: Purchase, originalTransactionId: String?) {
        switch transaction {
        case nil:
            return (.none(type == .test ? .test : .noTransaction), nil)
        case .rejected(let reason)?:
            return (.rejected(reason), nil)
        case .verified(let transactionId, let originalTransactionId)?:
            let original = originalTransactionId ?? transactionId
            guard type == .consumptionRequest else {
                return (.grant(.notification(signedPayload: signedPayload), evidenceHash: evidenceHash), original)
            }
            guard let transactionId else { return (.none(.noTransaction), original) }
            return (.consumptionRequest(.init(transactionId: transactionId, reason: consumptionRequestReason, policy: refundPolicy)), original)
        }
    }
}
