import AppStoreModels
import StorekeeperDomain

extension GrantPlanner {
    /// Planner tests write Apple's answers; the planner reads the evidence they convert into.
    static func plan(_ response: VerifyReceiptResponse, context: GrantContext) -> GrantDecision {
        guard let evidence = PurchaseEvidence(verifyReceipt: response, environment: .sandbox) else {
            return .reject(reason: .appleResponseMissingReceipt)
        }
        return plan(evidence, context: context)
    }
}
