import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Apple's per-customer `appTransactionId` (2025) over real HTTP, on both backends: stored with
/// each transaction a StoreKit 2 payload names it in, queryable by an operator, and the key by
/// which a RESCIND_CONSENT (which names no purchase) reaches the app users concerned.
@Suite("appTransactionId and RESCIND_CONSENT")
struct AppTransactionTests {
    @Test("stored per transaction, found by id, and a RESCIND_CONSENT tells each holder once", arguments: WebhookTests.backends)
    func appTransactionAndConsent(backend: String) async throws {
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "apptx") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
        }) { stack in
            try await stack.sendNotifications()
            let api = stack.api
            let admin = ["Authorization": "Bearer \(api.adminKey)"]
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let unlock = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let account = try #require(try jwsPayload(unlock.signedTransaction)["appTransactionId"] as? String)
            // The same Apple account buys for two app users (a shared iPad, a second login).
            for (user, purchase) in [("ann", unlock), ("bob", coins)] {
                let posted = try await api.postSignedTransaction(
                    appUserId: user, signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
                #expect(posted.status == 200, "\(posted.text)")
            }
            // A receipt carries no appTransactionId: a purchase only ever seen in one has none.
            let other = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let old = try await stack.simulator.purchase(device: other, productId: "com.example.removeads")
            #expect(try await api.postReceipt(appUserId: "cy", receipt: old.receipt, wait: TestWait.seconds).status == 200)
            #expect(try await api.subscriber("cy").history.map(\.appTransactionId) == [nil])

            #expect(try await api.subscriber("ann").history.map(\.appTransactionId) == [account])
            let found = try await api.http.send(.GET, "/v1/admin/apps/demo/app-transactions/\(account)", headers: admin)
            #expect(found.status == 200, "\(found.text)")
            #expect(found.json["appUserIds"] as? [String] == ["ann", "bob"])
            let transactions = try #require(found.json["transactions"] as? [[String: Any]])
            #expect(Set(transactions.compactMap { $0["transactionId"] as? String }) == [unlock.transactionId, coins.transactionId])
            #expect(transactions.allSatisfy { $0["appTransactionId"] as? String == account })
            #expect(try await api.http.send(.GET, "/v1/admin/apps/demo/app-transactions/123", headers: admin).status == 404)
            let malformed = try await api.http.send(.GET, "/v1/admin/apps/demo/app-transactions/a%20b", headers: admin)
            #expect(malformed.status == 400 && malformed.errorCode == "invalid_request")
            #expect(try await api.http.send(.GET, "/v1/admin/apps/demo/app-transactions/\(account)").status == 401)

            // Apple: the customer withdrew consent. Both holders are told, once each.
            let rescinded = try await stack.simulator.http.send(.POST, "/sim/devices/\(device.uuidString)/rescind-consent")
            #expect(rescinded.status == 202, "\(rescinded.text)")
            let told = try await stack.whenSettled { try await api.events("?types=consent_rescinded").count >= 2 }
            #expect(told)
            let events = try await api.events("?types=consent_rescinded")
            #expect(events.map(\.event.appUserId).sorted() == ["ann", "bob"])
            #expect(events.allSatisfy { $0.event.details?.appTransactionId == account && $0.event.source == .notification })
            // What they own did not change.
            #expect(try await api.subscriber("ann").activeEntitlements == ["com.example.removeads"])

            // Apple delivers it again: stored once, no second event.
            let signed = try #require(rescinded.json["signedPayload"] as? String)
            let again = try await api.postNotification(signedPayload: signed)
            #expect(again.status == 200 && again.json["duplicate"] as? Bool == true, "\(again.text)")
            #expect(try await api.events("?types=consent_rescinded").count == 2)

            // An account with no stored purchase: stored, nobody to tell.
            let stranger = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let unknown = try await stack.simulator.http.send(.POST, "/sim/devices/\(stranger.uuidString)/rescind-consent")
            let unknownSigned = try #require(unknown.json["signedPayload"] as? String)
            let answer = try await api.postNotification(signedPayload: unknownSigned)
            #expect(answer.status == 200, "\(answer.text)")
            #expect(
                answer.json["outcome"] as? String == "consent_rescinded_unknown_customer"
                    || answer.json["duplicate"] as? Bool == true, "\(answer.text)")
            #expect(try await api.events("?types=consent_rescinded").count == 2)
        }
    }
}

/// `POST /v1/subscribers/{id}/app-transaction` attacked: whose path, what body, whose signature.
@Suite("the device's app transaction, posted")
struct AppTransactionRouteTests {
    @Test(
        "kept for the caller's own user or anonymous id; refused for another user's path, without a token for a known user, for text that is no JWS, for a signed transaction, for a missing field"
    )
    func attacks() async throws {
        try await withStack(configure: { $0.apps[0].client?.allowAnonymous = true }) { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let signed = try #require(
                try await stack.simulator.http.send(.GET, "/sim/devices/\(device.uuidString)/app-transaction").json["signedAppTransaction"] as? String
            )
            func post(_ user: String, _ body: String, as headers: [String: String]) async throws -> HTTPJSONClient.Reply {
                try await http.send(.POST, "/v1/subscribers/\(user)/app-transaction", headers: headers, body: Data(body.utf8))
            }
            let body = #"{"signedAppTransaction":"\#(signed)"}"#

            let own = try await post("ann", body, as: try DemoCallers.client(as: "ann"))
            #expect(
                own.status == 200 && own.json["originalAppVersion"] as? String == "1" && own.json["environment"] as? String == "Sandbox",
                "\(own.text)")
            #expect(try await stack.api.subscriber("ann").appTransaction?.appTransactionId == own.json["appTransactionId"] as? String)
            let backend = try await post("bob", body, as: DemoCallers.backend)
            #expect(backend.status == 200, "\(backend.text)")
            let anonymousId = "$anon:" + UUID().uuidString.lowercased()
            let anonymous = try await post(anonymousId, body, as: DemoCallers.anonymous)
            #expect(anonymous.status == 200, "\(anonymous.text)")

            let other = try await post("carl", body, as: try DemoCallers.client(as: "ann"))
            #expect(other.status == 403 && other.errorCode == "other_user", "\(other.text)")
            #expect(try await stack.api.subscriber("carl").appTransaction == nil, "nothing kept for another user")
            let tokenless = try await post("ann", body, as: DemoCallers.anonymous)
            #expect(tokenless.status == 401, "\(tokenless.text)")

            let notJWS = try await post("ann", #"{"signedAppTransaction":"a.b.c"}"#, as: DemoCallers.backend)
            #expect(notJWS.status == 400 && notJWS.errorCode == "invalid_app_transaction", "\(notJWS.text)")
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let transaction = try await post("ann", #"{"signedAppTransaction":"\#(purchase.signedTransaction)"}"#, as: DemoCallers.backend)
            #expect(transaction.status == 422 && transaction.errorCode == "app_transaction_rejected", "\(transaction.text)")
            // The payload with its last signature byte changed: Apple's signature no longer holds.
            var forged = Array(signed)
            forged[forged.count - 2] = forged[forged.count - 2] == "A" ? "B" : "A"
            let edited = try await post("ann", #"{"signedAppTransaction":"\#(String(forged))"}"#, as: DemoCallers.backend)
            #expect([400, 422].contains(edited.status), "\(edited.text)")
            let missing = try await post("ann", "{}", as: DemoCallers.backend)
            #expect(missing.status == 400, "\(missing.text)")
        }
    }
}
