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
                .PATCH, path, headers: DemoCallers.backend, body: Data(#"{"email":"erin7q@example.net","custom":{"plan":"team","seats":"5"}}"#.utf8))
            #expect(set.status == 200 && set.json["email"] as? String == "erin7q@example.net", "\(set.text)")
            // The user's own app: merged, a null clears.
            let own = try await http.send(
                .PATCH, path, headers: try DemoCallers.client(as: "erin-7q"), body: Data(#"{"displayName":"Erin","custom":{"seats":null}}"#.utf8))
            #expect(
                own.status == 200 && (own.json["custom"] as? [String: String]) == ["plan": "team"] && own.json["displayName"] as? String == "Erin")
            // Another user's app, a bad address, an unknown field, a number, too many keys: refused, nothing changed.
            let other = try await http.send(
                .PATCH, path, headers: try DemoCallers.client(as: "mallory"), body: Data(#"{"email":"m@evil.test"}"#.utf8))
            #expect(other.status == 403 && other.errorCode == "other_user")
            let keys = (0..<51).map { "\"k\($0)\":\"v\"" }.joined(separator: ",")
            for body in [
                #"{"email":"nope"}"#, #"{"phone":"1"}"#, #"{"custom":{"a":1}}"#, #"{"custom":{"bad key":"x"}}"#, "{\"custom\":{\(keys)}}", "[1]",
                #"{"displayName":""}"#,
            ] {
                let refused = try await http.send(.PATCH, path, headers: DemoCallers.backend, body: Data(body.utf8))
                #expect(refused.status == 400, "\(body): \(refused.text)")
            }
            let view = try await stack.api.subscriber("erin-7q")
            #expect(view.attributes == SubscriberAttributes(email: "erin7q@example.net", displayName: "Erin", custom: ["plan": "team"]))

            // A purchase: its event carries the attributes.
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(try await stack.api.postReceipt(appUserId: "erin-7q", receipt: bought.receipt, wait: TestWait.seconds).status == 200)
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
            let again = try await stack.api.postReceipt(appUserId: "erin-7q", receipt: bought.receipt, wait: TestWait.seconds)
            #expect(try await stack.api.subscriber("erin-7q").activeEntitlements.isEmpty, "\(again.text)")
        }
    }

    /// A purchase with the customer's `appTransactionId` for `user`, and Apple's RESCIND_CONSENT
    /// for that customer, signed by the simulator (posted by the test, not delivered).
    func consentRescinded(_ stack: LocalStack, user: String) async throws -> (purchase: SimulatorClient.Purchase, notification: String) {
        let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
        let posted = try await stack.api.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
        #expect(posted.status == 200, "\(posted.text)")
        let rescinded = try await stack.simulator.http.send(.POST, "/sim/devices/\(device.uuidString)/rescind-consent")
        return (bought, try #require(rescinded.json["signedPayload"] as? String, "\(rescinded.text)"))
    }

    @Test(
        "revoke_access: a withdrawn consent withholds access (events say so), once however often Apple says it; an operator lifts it, or suspends by hand",
        arguments: WebhookTests.backends)
    func consentRevokesAccess(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "consent") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
            configuration.apps[0].rescindConsentPolicy = .revokeAccess
        }) { stack in
            let api = stack.api
            let (bought, notification) = try await consentRescinded(stack, user: "kid-1")
            #expect(try await api.subscriber("kid-1").entitlements["no_ads"]?.isActive == true)
            for _ in 0..<2 {
                let answer = try await api.postNotification(signedPayload: notification)
                #expect(answer.status == 200, "\(answer.text)")
            }
            let view = try await api.subscriber("kid-1")
            #expect(view.accessSuspended?.reason == "consent_rescinded" && view.accessSuspended?.actor == "apple:RESCIND_CONSENT")
            #expect(view.entitlements.isEmpty && view.activeEntitlements.isEmpty && view.history.map(\.transactionId) == [bought.transactionId])
            let types = try await api.events("?limit=50").filter { $0.event.appUserId == "kid-1" }.map(\.event.type)
            #expect(types.suffix(3) == [.consentRescinded, .accessSuspended, .entitlementRevoked], "\(types)")
            #expect(types.filter { $0 == .accessSuspended }.count == 1, "the redelivery suspends nothing more")

            let admin = ["Authorization": "Bearer \(api.adminKey)", "Storekeeper-Actor": "support@example.com"]
            let path = "/v1/admin/apps/demo/subscribers/kid-1/suspension"
            #expect(try await api.http.send(.DELETE, path, headers: admin).status == 204)
            #expect(try await api.subscriber("kid-1").entitlements["no_ads"]?.isActive == true)
            let after = try await api.events("?limit=50").filter { $0.event.appUserId == "kid-1" }.map(\.event.type)
            #expect(after.suffix(2) == [.accessRestored, .entitlementGranted], "\(after)")
            #expect(try await api.http.send(.DELETE, path, headers: admin).status == 404)

            // By hand: 201, then 200 unchanged; refused bodies change nothing.
            let body = Data(#"{"reason":"chargeback fraud"}"#.utf8)
            let first = try await api.http.send(.PUT, path, headers: admin, body: body)
            #expect(
                first.status == 201 && first.json["reason"] as? String == "chargeback fraud"
                    && first.json["actor"] as? String == "support@example.com")
            #expect(try await api.http.send(.PUT, path, headers: admin, body: body).status == 200)
            for bad in [#"{"reason":""}"#, #"{}"#, #"{"reason":"x","until":"never"}"#] {
                #expect(try await api.http.send(.PUT, path, headers: admin, body: Data(bad.utf8)).status == 400, "\(bad)")
            }
            #expect(try await api.subscriber("kid-1").activeEntitlements.isEmpty)
            let audit = try await api.http.send(.GET, "/v1/admin/apps/demo/audit", headers: admin)
            let actions = ((audit.json["entries"] as? [[String: Any]]) ?? []).compactMap { ($0["entry"] as? [String: Any])?["action"] as? String }
            #expect(actions == ["access_suspended", "access_restored", "access_suspended"], "\(actions)")
        }
    }

    @Test("delete_data: a withdrawn consent deletes the holder's personal data; money stays under a tombstone", arguments: WebhookTests.backends)
    func consentDeletesData(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "consent") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
            configuration.apps[0].rescindConsentPolicy = .deleteData
        }) { stack in
            let api = stack.api
            _ = try await api.http.send(
                .PATCH, "/v1/subscribers/kid-2q/attributes", headers: DemoCallers.backend, body: Data(#"{"displayName":"Kiddo Two"}"#.utf8))
            let (bought, notification) = try await consentRescinded(stack, user: "kid-2q")
            let answer = try await api.postNotification(signedPayload: notification)
            #expect(answer.status == 200 && answer.json["outcome"] as? String == "consent_rescinded", "\(answer.text)")
            for needle in ["kid-2q", "Kiddo Two"] {
                let left = try await stack.store.tablesMentioning(needle)
                #expect(left.isEmpty, "\(needle): \(left)")
            }
            let holders = try await stack.store.transactions(
                appId: "demo",
                appTransactionId: try #require(
                    try await api.subscriber("kid-2q").history.first?.appTransactionId ?? jwsPayload(bought.signedTransaction)["appTransactionId"]
                        as? String))
            #expect(holders.count == 1 && CustomerErasure.isTombstone(holders[0].appUserId))
            // Apple again: nothing more to delete, still answered.
            #expect(try await api.postNotification(signedPayload: notification).status == 200)
        }
    }
}
