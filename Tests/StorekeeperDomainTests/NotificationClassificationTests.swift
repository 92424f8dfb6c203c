import AppStoreModels
import Persistence
import StorekeeperCore
import StorekeeperDomain
import Testing

/// What a verified V2 notification leads to, decided in the application layer from what the
/// edge verified. Through Apple's POST and the simulator in `NotificationTests`.
@Suite("IngestNotification.classify: what a verified notification leads to")
struct NotificationClassificationTests {
    func classify(_ type: NotificationType, _ transaction: IngestNotification.TransactionFact?) -> (String, String?) {
        let (purchase, original) = IngestNotification.classify(
            type: type, transaction: transaction, consumptionRequestReason: "UNINTENDED_PURCHASE", refundPolicy: RefundPolicy(),
            signedPayload: "jws", evidenceHash: "h")
        let name: String =
            switch purchase {
            case .none(let outcome): "none \(outcome.rawValue)"
            case .rejected(let reason): "rejected \(reason.rawValue)"
            case .consumptionRequest(let notice): "consumption \(notice.transactionId) \(notice.reason ?? "-")"
            case .grant(.notification(let signed), let hash): "grant \(signed) \(hash)"
            case .grant: "grant of something else"
            }
        return (name, original)
    }

    @Test("a transaction is granted to its original's owner; a consumption request is recorded; TEST, none and a rejected one lead to nothing")
    func table() {
        let verified = IngestNotification.TransactionFact.verified(transactionId: "2", originalTransactionId: "1")
        #expect(classify(.didRenew, verified) == ("grant jws h", "1"))
        #expect(classify(.refund, .verified(transactionId: "5", originalTransactionId: nil)) == ("grant jws h", "5"))
        #expect(classify(.consumptionRequest, verified) == ("consumption 2 UNINTENDED_PURCHASE", "1"))
        #expect(classify(.consumptionRequest, .verified(transactionId: nil, originalTransactionId: "1")) == ("none no_transaction", "1"))
        #expect(classify(.test, nil) == ("none test", nil))
        #expect(classify(.didRenew, nil) == ("none no_transaction", nil))
        #expect(classify(.didRenew, .rejected("jws_signature_invalid")) == ("rejected jws_signature_invalid", nil))
    }
}
