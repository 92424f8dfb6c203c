import AppStoreModels
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

/// Ownership by acceptance order on every adapter: the purchase goes to the user who submitted
/// it first, whichever verification finishes first.
@Suite("storage conformance: ownership by acceptance order")
struct OwnershipByAcceptanceTests {
    let t0 = referenceTime
    let request = GrantRequest(appId: "app", bundleId: "com.example", bindingPolicy: .refuse, waitRetryAt: referenceTime.addingTimeInterval(5))

    /// A store with the catalog grants are planned from (read in the grant's own transaction).
    func make(_ factory: StoreFactory) async throws -> any StorekeeperStore {
        let store = try await factory.make()
        try await store.seedProducts(appId: "app", products: [Product(productId: "ads", type: .nonConsumable)], now: t0)
        return store
    }

    func response() -> VerifyReceiptResponse {
        VerifyReceiptResponse(
            status: .valid, environment: .sandbox,
            receipt: ReceiptInfo(
                bundleId: "com.example",
                inApp: [
                    InAppTransaction(
                        productId: "ads", transactionId: "o1", originalTransactionId: "o1", purchaseDate: referenceTime,
                        originalPurchaseDate: referenceTime)
                ]))
    }

    func submit(_ store: any StorekeeperStore, user: String, at: Date) async throws -> SubmissionResult {
        try await SubmitEvidence(store: store)(
            EvidenceSubmission(
                appId: "app", appUserId: user, evidenceHash: "same-receipt", evidence: .receipt(base64: "cg=="), claims: ["o1"]),
            now: at)
    }

    func leases(_ store: any StorekeeperStore, at: Date) async throws -> [String: JobLease] {
        let leased = try await store.leaseJobs(kinds: ["verify_receipt"], limit: 10, owner: "test", now: at, leaseDuration: 30)
        var byVerification: [String: JobLease] = [:]
        for lease in leased {
            if let (verification, _) = try await store.verificationForJob(jobId: lease.jobId) { byVerification[verification.id] = lease }
        }
        return byVerification
    }

    @Test("the second submitter's verification finishes first: it waits; the first submitter is granted", arguments: StoreFactory.all)
    func firstSubmitterWins(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let outcomes = VerificationOutcomes(store: store)
        let alice = try await submit(store, user: "alice", at: t0)
        let mallory = try await submit(store, user: "mallory", at: t0.addingTimeInterval(1))
        let leased = try await leases(store, at: t0.addingTimeInterval(2))
        let aliceLease = try #require(leased[alice.verification.id])
        let malloryLease = try #require(leased[mallory.verification.id])
        let report = AttemptReport(statuses: [0], environment: "sandbox", reason: nil)

        // Alice's worker is slow (or dead); Mallory's answer comes first.
        let early = try await outcomes.completeVerified(
            malloryLease, verificationId: mallory.verification.id, evidence: PurchaseEvidence(verifyReceipt: response(), environment: .sandbox)!,
            report: report,
            request: request, now: t0.addingTimeInterval(3))
        guard case .waiting(let reason) = early else {
            Issue.record("the later submitter must wait, got \(early)")
            return
        }
        #expect(reason == "earlier_claim_pending")
        let waiting = try #require(try await store.verification(id: mallory.verification.id))
        #expect(waiting.state == .retryScheduled && waiting.nextAttemptAt == t0.addingTimeInterval(5))
        #expect(try await store.owner(appId: "app", originalTransactionId: "o1") == nil)

        let granted = try await outcomes.completeVerified(
            aliceLease, verificationId: alice.verification.id, evidence: PurchaseEvidence(verifyReceipt: response(), environment: .sandbox)!,
            report: report,
            request: request, now: t0.addingTimeInterval(4))
        guard case .granted(let summary) = granted else {
            Issue.record("the first submitter is granted, got \(granted)")
            return
        }
        #expect(summary.granted == ["o1"])

        // Mallory's retry now meets Alice's binding: a conflict, nothing granted.
        let retry = try #require(try await leases(store, at: t0.addingTimeInterval(5))[mallory.verification.id])
        guard
            case .granted(let second) = try await outcomes.completeVerified(
                retry, verificationId: mallory.verification.id, evidence: PurchaseEvidence(verifyReceipt: response(), environment: .sandbox)!,
                report: report,
                request: request, now: t0.addingTimeInterval(6))
        else {
            Issue.record("the retry ends with a conflict")
            return
        }
        #expect(second.granted.isEmpty && second.conflicts.map(\.transactionId) == ["o1"])
        #expect(try await store.owner(appId: "app", originalTransactionId: "o1") == "alice")
        #expect(try await store.transactions(appId: "app", appUserId: "mallory").isEmpty)
    }

    @Test("a claim whose evidence proved invalid is void: the next submitter is granted", arguments: StoreFactory.all)
    func invalidClaimIsVoid(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let outcomes = VerificationOutcomes(store: store)
        let forger = try await submit(store, user: "forger", at: t0)
        let alice = try await submit(store, user: "alice", at: t0.addingTimeInterval(1))
        let leased = try await leases(store, at: t0.addingTimeInterval(2))
        #expect(
            try await outcomes.finishInvalid(
                try #require(leased[forger.verification.id]), verificationId: forger.verification.id,
                report: AttemptReport(statuses: [], environment: nil, reason: "receipt_signature_invalid"), now: t0.addingTimeInterval(2)))
        let granted = try await outcomes.completeVerified(
            try #require(leased[alice.verification.id]), verificationId: alice.verification.id,
            evidence: PurchaseEvidence(verifyReceipt: response(), environment: .sandbox)!,
            report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0.addingTimeInterval(3))
        guard case .granted(let summary) = granted else {
            Issue.record("expected a grant, got \(granted)")
            return
        }
        #expect(summary.granted == ["o1"])
    }
}
