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
            let told = try await eventually { try await api.events("?types=consent_rescinded").count >= 2 }
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
