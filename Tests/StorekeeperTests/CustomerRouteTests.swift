import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Customers' own data over real HTTP, on both backends: attributes set by the backend or the
/// user's own app, carried in the answer, the feed and webhooks; a customer deleted by an operator.
@Suite("customers: attributes and deletion")
struct CustomerRouteTests {
    var backend: [String: String] { ["Authorization": "Bearer \(DemoConfiguration.appApiKey)"] }

    func client(as user: String) throws -> [String: String] {
        let now = Int(Date().timeIntervalSince1970)
        let token = try UserTokens.hs256(["sub": user, "exp": now + 300], secret: DemoConfiguration.userTokenSecret)
        return ["Authorization": "Bearer \(DemoConfiguration.clientKey)", "Storekeeper-User-Token": token]
    }

    @Test(
        "attributes set by the backend and by the user's app, merged, in the answer and the next event; deletion leaves money, not the person",
        arguments: WebhookTests.backends)
    func attributesAndDeletion(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "customers") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
        }) { stack in
            let http = stack.api.http
            let path = "/v1/subscribers/erin-7q/attributes"
            let set = try await http.send(
                .PATCH, path, headers: backend, body: Data(#"{"email":"erin7q@example.net","custom":{"plan":"team","seats":"5"}}"#.utf8))
            #expect(set.status == 200 && set.json["email"] as? String == "erin7q@example.net", "\(set.text)")
            // The user's own app: merged, a null clears.
            let own = try await http.send(
                .PATCH, path, headers: try client(as: "erin-7q"), body: Data(#"{"displayName":"Erin","custom":{"seats":null}}"#.utf8))
            #expect(
                own.status == 200 && (own.json["custom"] as? [String: String]) == ["plan": "team"] && own.json["displayName"] as? String == "Erin")
            // Another user's app, a bad address, an unknown field, a number, too many keys: refused, nothing changed.
            let other = try await http.send(.PATCH, path, headers: try client(as: "mallory"), body: Data(#"{"email":"m@evil.test"}"#.utf8))
            #expect(other.status == 403 && other.errorCode == "other_user")
            let keys = (0..<51).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
            for body in [
                #"{"email":"nope"}"#, #"{"phone":"1"}"#, #"{"custom":{"a":1}}"#, #"{"custom":{"bad key":"x"}}"#, "{\"custom\":{\(keys)}}", "[1]",
                #"{"displayName":""}"#,
            ] {
                let refused = try await http.send(.PATCH, path, headers: backend, body: Data(body.utf8))
                #expect(refused.status == 400, "\(body): \(refused.text)")
            }
            let view = try await stack.api.subscriber("erin-7q")
            #expect(view.attributes == SubscriberAttributes(email: "erin7q@example.net", displayName: "Erin", custom: ["plan": "team"]))

            // A purchase: its event carries the attributes.
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(try await stack.api.postReceipt(appUserId: "erin-7q", receipt: bought.receipt, wait: 30).status == 200)
            let events = try await stack.api.events("?limit=50")
            #expect(events.last { $0.event.appUserId == "erin-7q" }?.event.entitlements?.attributes?.email == "erin7q@example.net")

            // Deleted: the answer for erin is empty, the purchase stays under the tombstone.
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)", "Storekeeper-Actor": "privacy@example.com"]
            let deleted = try await http.send(.DELETE, "/v1/admin/apps/demo/subscribers/erin-7q", headers: admin)
            #expect(deleted.status == 200, "\(deleted.text)")
            let tombstone = try #require(deleted.json["tombstone"] as? String)
            #expect(tombstone.hasPrefix("deleted_") && (deleted.json["rows"] as? [String: Int])?["transactions"] == 1)
            let after = try await stack.api.subscriber("erin-7q")
            #expect(after.history.isEmpty && after.attributes == nil && after.entitlements.isEmpty)
            let kept = try await stack.api.subscriber(tombstone)
            #expect(kept.history.map(\.transactionId) == [bought.transactionId] && kept.attributes == nil)
            #expect(try await stack.store.tablesMentioning("erin7q@example.net").isEmpty)
            let left = try await stack.store.tablesMentioning("erin-7q")
            #expect(left.isEmpty, "\(left)")
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/subscribers/erin-7q", headers: admin).status == 404)
            let audit = try await http.send(.GET, "/v1/admin/apps/demo/audit", headers: admin)
            let last = ((audit.json["entries"] as? [[String: Any]])?.last?["entry"]) as? [String: Any]
            #expect(last?["action"] as? String == "customer_deleted" && last?["appUserId"] as? String == tombstone)
            // The same purchase claimed again by the same id: it belongs to the tombstone now.
            let again = try await stack.api.postReceipt(appUserId: "erin-7q", receipt: bought.receipt, wait: 30)
            #expect(try await stack.api.subscriber("erin-7q").activeEntitlements.isEmpty, "\(again.text)")
        }
    }
}
