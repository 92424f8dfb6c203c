import AppStoreModels
import Foundation
import Persistence
import StorekeeperCore
import StorekeeperDomain
import Testing

/// StoreKit 2 evidence becomes a submission only once verified for the app and allowed for the
/// user; the routes are tested against the simulator's signed transactions in `StoreKit2Tests`.
@Suite("AcceptSignedTransaction: verified, owned, then submitted, in process")
struct AcceptSignedTransactionTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    struct FakeVerifier: SignedTransactionVerifying {
        let verdict: SignedTransactionVerdict
        func verify(_ jws: String, now: Date) async throws -> SignedTransactionVerdict { verdict }
    }

    struct NotTheirs: Error {}

    static func transaction(_ json: String) throws -> SignedTransaction {
        try JSONDecoder().decode(SignedTransaction.self, from: Data(json.utf8))
    }

    @Test("a rejected transaction is never submitted, and its owner rule is not asked")
    func rejected() async throws {
        var asked = false
        let outcome = try await AcceptSignedTransaction()(
            "jws", appId: "app", appUserId: "alice", verifier: FakeVerifier(verdict: .rejected(.bundleIdMismatch, message: "other app")),
            now: Self.now
        ) { _ in asked = true }
        guard case .rejected(let reason, let message) = outcome else { throw NotTheirs() }
        #expect(reason == .bundleIdMismatch && message == "other app" && !asked)
    }

    @Test("a verified transaction is submitted for the user, claiming its original transaction, unless the owner rule refuses")
    func verified() async throws {
        let transaction = try Self.transaction(#"{"transactionId":"t-2","originalTransactionId":"o-1","appAccountToken":"A"}"#)
        let verifier = FakeVerifier(verdict: .verified(transaction, evidenceHash: "h"))
        let outcome = try await AcceptSignedTransaction()("jws", appId: "app", appUserId: "alice", verifier: verifier, now: Self.now) {
            #expect($0.appAccountToken == "A")
        }
        guard case .submission(let submission) = outcome else { throw NotTheirs() }
        #expect(submission.appId == "app" && submission.appUserId == "alice" && submission.evidenceHash == "h")
        #expect(submission.claims == ["o-1"])
        guard case .signedTransaction(let jws) = submission.evidence, jws == "jws" else { throw NotTheirs() }
        await #expect(throws: NotTheirs.self) {
            try await AcceptSignedTransaction()("jws", appId: "app", appUserId: "bob", verifier: verifier, now: Self.now) { _ in
                throw NotTheirs()
            }
        }
        let first = try Self.transaction(#"{"transactionId":"t-1"}"#)
        let alone = try await AcceptSignedTransaction()(
            "jws", appId: "app", appUserId: "alice", verifier: FakeVerifier(verdict: .verified(first, evidenceHash: "h")), now: Self.now
        ) { _ in }
        guard case .submission(let own) = alone else { throw NotTheirs() }
        #expect(own.claims == ["t-1"], "a first purchase is its own original")
    }
}
