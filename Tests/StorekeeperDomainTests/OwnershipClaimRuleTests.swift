import AppStoreModels
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import TestFixtures
import Testing

@Suite("ownership claims (rule)")
struct OwnershipClaimRuleTests {
    func claim(_ user: String, _ sequence: Int64, _ state: VerificationState) -> OwnershipClaim {
        OwnershipClaim(originalTransactionId: "o1", appUserId: user, acceptedSequence: sequence, verificationState: state)
    }

    @Test("the earliest live claim decides: a later submitter waits for it, the earliest proceeds")
    func earliestLiveClaim() {
        let claims = [claim("bob", 2, .pending), claim("alice", 1, .verifying)]
        #expect(OwnershipClaimRule.verdict(for: "bob", claims: claims) == .wait(claimant: "alice"))
        #expect(OwnershipClaimRule.verdict(for: "alice", claims: claims) == .proceed)
        #expect(OwnershipClaimRule.verdict(for: "carol", claims: claims) == .wait(claimant: "alice"))
        #expect(OwnershipClaimRule.verdict(for: "carol", claims: []) == .proceed)
    }

    @Test("a claim whose verification ended does not hold anyone back", arguments: [VerificationState.invalid, .verified])
    func endedClaimsAreVoid(state: VerificationState) {
        #expect(OwnershipClaimRule.verdict(for: "bob", claims: [claim("mallory", 1, state), claim("bob", 2, .verifying)]) == .proceed)
    }

    @Test(
        "claims still waiting (retry, held for configuration) hold later submitters back",
        arguments: [
            VerificationState.retryScheduled, .configurationError, .pending,
        ])
    func unfinishedClaimsHold(state: VerificationState) {
        #expect(OwnershipClaimRule.verdict(for: "bob", claims: [claim("alice", 1, state)]) == .wait(claimant: "alice"))
    }

    @Test("the planner waits instead of binding under the refuse policy; transfer keeps the last-verified rule")
    func planner() {
        let response = VerifyReceiptResponse(
            status: .valid, environment: .sandbox,
            receipt: ReceiptInfo(
                bundleId: "com.example",
                inApp: [
                    InAppTransaction(
                        productId: "ads", transactionId: "o1", originalTransactionId: "o1", purchaseDate: referenceTime,
                        originalPurchaseDate: referenceTime)
                ]))
        var context = GrantContext(
            appId: "app", bundleId: "com.example", appUserId: "bob", verificationId: "v2", now: referenceTime,
            catalog: ["ads": Product(productId: "ads", type: .nonConsumable)], bindingPolicy: .refuse)
        context.claims = ["o1": [claim("alice", 1, .verifying), claim("bob", 2, .verifying)]]
        guard case .wait(let reason, let original) = GrantPlanner.plan(response, context: context) else {
            Issue.record("expected to wait for alice")
            return
        }
        #expect(reason == "earlier_claim_pending" && original == "o1")
        context.bindingPolicy = .transfer
        guard case .grant = GrantPlanner.plan(response, context: context) else {
            Issue.record("transfer does not wait")
            return
        }
        context.bindingPolicy = .refuse
        context.appUserId = "alice"
        guard case .grant(let plan) = GrantPlanner.plan(response, context: context) else {
            Issue.record("alice, the first submitter, is granted")
            return
        }
        #expect(plan.bindings.map(\.appUserId) == ["alice"])
    }
}
