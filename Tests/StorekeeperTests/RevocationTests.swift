import AppStoreSimulator
import Foundation
import NIOHTTP1
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Online revocation checks (OCSP) of StoreKit 2 signed data, against the simulator's
/// responder over HTTP: answers cached per certificate, a revoked leaf refused once the cached
/// answer is due again, an unreachable responder refused only in hard-fail mode.
@Suite("revocation (OCSP) of signed data")
struct RevocationTests {
    func purchase(_ stack: LocalStack, device: UUID) async throws -> String {
        try await stack.simulator.purchase(device: device, productId: "com.example.coins100").signedTransaction
    }

    @Test("hard fail: good answers are cached; a revoked leaf is refused when its answer is due again")
    func revokedLeaf() async throws {
        try await withStack(configure: {
            $0.receiptTrust.revocation.mode = .hardFail
            $0.receiptTrust.revocation.cacheSeconds = 1
        }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let first = try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: try await purchase(stack, device: device))
            #expect(first.status == 200, "\(first.text)")
            // The leaf (asked of the intermediate) and the intermediate (asked of the root).
            #expect(try await stack.simulator.stats()["ocsp.requests"] == 2)
            let second = try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: try await purchase(stack, device: device))
            #expect(second.status == 200)
            #expect(try await stack.simulator.stats()["ocsp.requests"] == 2, "the chain and the answers are cached")

            _ = try await stack.simulator.http.send(.POST, "/sim/pki/revoke", json: ["certificate": "leaf"])
            try await Task.sleep(for: .milliseconds(1200))
            let refused = try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: try await purchase(stack, device: device))
            #expect(refused.status == 422 && refused.errorCode == "signed_transaction_rejected", "\(refused.text)")
            #expect(refused.text.contains("revoked"), "\(refused.text)")
            #expect(try await stack.simulator.stats()["ocsp.requests"] ?? 0 >= 3)
        }
    }

    @Test("an unreachable responder refuses in hard-fail mode and not in soft-fail mode")
    func unreachable() async throws {
        for (mode, expected) in [(RevocationPolicy.Mode.hardFail, 422), (.softFail, 200)] {
            try await withStack(configure: {
                $0.receiptTrust.revocation.mode = mode
                $0.receiptTrust.revocation.responderOverride = "http://127.0.0.1:9/ocsp"
                $0.receiptTrust.revocation.timeoutSeconds = 0.5
            }) { stack in
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let answer = try await stack.api.postSignedTransaction(
                    appUserId: "alice", signedTransaction: try await purchase(stack, device: device))
                #expect(answer.status == expected, "\(mode): \(answer.text)")
            }
        }
    }
}
