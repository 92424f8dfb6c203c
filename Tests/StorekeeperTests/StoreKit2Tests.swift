import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// `POST /v1/transactions` over HTTP with the simulator's signed StoreKit 2 transactions.
@Suite("StoreKit 2 signed transactions over HTTP")
struct StoreKit2Tests {
    @Test("each product type bought with StoreKit 2 is verified locally and granted at once, with the receipts' rules")
    func everyProductType() async throws {
        try await withStack { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
            let products = [
                "com.example.coins100", "com.example.removeads", "com.example.pro.monthly", "com.example.season.pass", "com.example.free.tier",
            ]
            for product in products {
                let purchase = try await stack.simulator.purchase(device: device, productId: product)
                let reply = try await api.postSignedTransaction(
                    appUserId: "alice", signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
                #expect(reply.status == 200, "\(product): \(reply.text)")
                #expect(reply.json["state"] as? String == "verified" && reply.json["environment"] as? String == "sandbox")
                #expect((reply.json["grant"] as? [String: Any])?["granted"] as? [String] == [purchase.transactionId], "\(reply.text)")
            }
            let alice = try await api.subscriber("alice")
            #expect(alice.creditBalance == 100)
            #expect(
                Set(alice.activeEntitlements)
                    == ["com.example.removeads", "com.example.free.tier", "com.example.pro.monthly", "com.example.season.pass"])
            // Apple was never asked.
            let stats = try await stack.simulator.http.send(.GET, "/sim/stats").json
            #expect(!stats.keys.contains { $0.contains(".status.") }, "\(stats)")
        }
    }

    @Test("a transaction is granted once: again as StoreKit 2, again inside a receipt, or by another user")
    func exactlyOnce() async throws {
        try await withStack { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let first = try await api.postSignedTransaction(appUserId: "bob", signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
            let again = try await api.postSignedTransaction(appUserId: "bob", signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
            #expect(first.status == 200 && again.status == 200 && first.json["id"] as? String == again.json["id"] as? String)
            // The StoreKit 1 receipt of the same purchase: already granted, nothing added.
            let receipt = try await api.postReceipt(appUserId: "bob", receipt: purchase.receipt, wait: TestWait.seconds)
            #expect((receipt.json["grant"] as? [String: Any])?["alreadyGranted"] as? [String] == [purchase.transactionId], "\(receipt.text)")
            // Someone else posting bob's transaction gets a conflict, not the coins.
            let mallory = try await api.postSignedTransaction(
                appUserId: "mallory", signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
            let conflicts = (mallory.json["grant"] as? [String: Any])?["conflicts"] as? [[String: Any]] ?? []
            #expect(conflicts.first?["code"] as? String == "original_transaction_owned_by_another_user", "\(mallory.text)")
            #expect(try await api.subscriber("bob").creditBalance == 100)
            #expect(try await api.subscriber("mallory").creditBalance == 0)
            #expect(try await stack.store.countTransactions(appId: "demo") == 1)
            let ledger = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture))
            #expect(ledger.count == 1 && ledger[0].priceMicros == 990_000)
        }
    }

    @Test("forged or foreign signed transactions are refused at once with a machine-readable reason")
    func refused() async throws {
        try await withStack(configure: { c in
            c.apps.append(
                AppConfiguration(
                    id: "other", bundleId: "com.example.other", sharedSecret: "s", acceptSandbox: true,
                    apiKey: "other-app-key-0123456789", products: [Product(productId: "gold", type: .nonConsumable)]))
        }) { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
            let good = try await stack.simulator.purchase(device: device, productId: "com.example.removeads").signedTransaction
            var parts = good.split(separator: ".").map(String.init)
            var signature = Array(parts[2])
            signature[5] = signature[5] == "A" ? "B" : "A"
            parts[2] = String(signature)
            let forged = try await api.postSignedTransaction(appUserId: "eve", signedTransaction: parts.joined(separator: "."))
            #expect(forged.status == 422 && forged.errorCode == "signed_transaction_rejected" && forged.text.contains("jws_signature_invalid"))
            let garbage = try await api.postSignedTransaction(appUserId: "eve", signedTransaction: "not-a-jws")
            #expect(garbage.status == 400 && garbage.errorCode == "invalid_signed_transaction")
            // Signed by a chain the server does not trust.
            let stranger = try SimulatorPKI()
            let payload = Data(String(good.split(separator: ".")[1]).utf8).base64URLDecoded()
            let untrusted = try await api.postSignedTransaction(appUserId: "eve", signedTransaction: try stranger.signJWS(payload: payload))
            #expect(untrusted.status == 422 && untrusted.text.contains("jws_chain_untrusted"))
            // Another app's purchase.
            let other = try await stack.simulator.createDevice(bundleId: "com.example.other", environment: "sandbox")
            let foreign = try await stack.simulator.purchase(device: other, productId: "gold")
            let reply = try await api.postSignedTransaction(appUserId: "eve", signedTransaction: foreign.signedTransaction)
            #expect(reply.status == 422 && reply.text.contains("jws_wrong_bundle_id"), "\(reply.text)")
            // appAccountToken: the backend may vouch for a token it issued, never for another one.
            let token = UUID().uuidString.lowercased()
            let tokened = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly", appAccountToken: token)
            let mismatch = try await api.postSignedTransaction(
                appUserId: "eve", signedTransaction: tokened.signedTransaction, appAccountToken: UUID().uuidString)
            #expect(mismatch.status == 409 && mismatch.errorCode == "app_account_token_mismatch")
            #expect(try await api.subscriber("eve").activeEntitlements.isEmpty)
            let matched = try await api.postSignedTransaction(
                appUserId: "eve", signedTransaction: tokened.signedTransaction, appAccountToken: token.uppercased(), wait: TestWait.seconds)
            #expect(matched.status == 200 && matched.json["state"] as? String == "verified")
        }
    }
}

extension Data {
    /// base64url (no padding) to bytes, for taking a JWS apart in tests.
    func base64URLDecoded() -> [UInt8] {
        var text = String(decoding: self, as: UTF8.self).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Array(Data(base64Encoded: text) ?? Data())
    }
}
