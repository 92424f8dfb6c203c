import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// `POST /v1/subscribers/{id}/customer-center-actions` attacked as a caller of the app would:
/// the event is the caller's own user's, about a transaction of theirs, once per key.
@Suite("customer-center actions route")
struct CustomerCenterRouteTests {
    @Test(
        "recorded once per key for the caller's own user and transaction; another user's transaction, another user's path, a token-less call for a known user, a user who bought nothing (made-up anonymous ids), a malformed body or key are refused and record nothing"
    )
    func attacks() async throws {
        try await withStack(configure: { $0.apps[0].client?.allowAnonymous = true }) { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            var bought: [String: String] = [:]
            for user in ["ann", "bob"] {
                let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                let posted = try await stack.api.postSignedTransaction(
                    appUserId: user, signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
                #expect(posted.status == 200, "\(posted.text)")
                bought[user] = purchase.transactionId
            }
            let ann = try DemoCallers.client(as: "ann")
            func post(_ user: String, _ body: String, as headers: [String: String]) async throws -> HTTPJSONClient.Reply {
                try await http.send(.POST, "/v1/subscribers/\(user)/customer-center-actions", headers: headers, body: Data(body.utf8))
            }
            func recorded(_ user: String) async throws -> [SubscriberEvent] {
                try await stack.api.events("?limit=200").map(\.event).filter {
                    $0.appUserId == user && [.refundRequestedInApp, .manageSubscriptionsShownInApp].contains($0.type)
                }
            }
            let annTx = try #require(bought["ann"])
            let refund = #"{"id":"k1","action":"refund_requested","transactionId":"\#(annTx)","outcome":"requested"}"#
            let first = try await post("ann", refund, as: ann)
            #expect(first.status == 200 && first.json["type"] as? String == "refund_requested_in_app", "\(first.text)")
            let again = try await post("ann", refund, as: ann)
            #expect(again.status == 200 && again.json["eventId"] as? String == first.json["eventId"] as? String)
            let shown = try await post("ann", #"{"id":"k2","action":"manage_subscriptions_shown"}"#, as: ann)
            #expect(shown.status == 200, "\(shown.text)")
            let events = try await recorded("ann")
            #expect(events.map(\.type) == [.refundRequestedInApp, .manageSubscriptionsShownInApp], "the same key twice is one event")
            #expect(events.first?.transactionId == annTx && events.first?.details?.reason == "requested")
            #expect(events.first?.productId == "com.example.coins100" && events.first?.source == nil, "unsigned: no evidence behind it")

            // Bob's transaction through Ann's token: as if it did not exist.
            let bobTx = try #require(bought["bob"])
            let stolen = try await post("ann", #"{"id":"k3","action":"refund_requested","transactionId":"\#(bobTx)","outcome":"requested"}"#, as: ann)
            #expect(stolen.status == 404, "\(stolen.text)")
            let unknown = try await post("ann", #"{"id":"k4","action":"refund_requested","transactionId":"999999","outcome":"requested"}"#, as: ann)
            #expect(unknown.status == 404 && unknown.errorCode == stolen.errorCode, "another user's transaction reads like none")
            let otherPath = try await post("bob", #"{"id":"k5","action":"manage_subscriptions_shown"}"#, as: ann)
            #expect(otherPath.status == 403 && otherPath.errorCode == "other_user", "\(otherPath.text)")
            let tokenless = try await post("ann", #"{"id":"k6","action":"manage_subscriptions_shown"}"#, as: DemoCallers.anonymous)
            #expect(tokenless.status == 401, "\(tokenless.text)")
            // Ids that bought nothing, made up by the caller: no events, whatever the number of ids.
            for user in ["$anon:" + UUID().uuidString.lowercased(), "$anon:" + UUID().uuidString.lowercased()] {
                let made = try await post(user, #"{"id":"k14","action":"manage_subscriptions_shown"}"#, as: DemoCallers.anonymous)
                #expect(made.status == 404, "\(made.text)")
                #expect(try await recorded(user).isEmpty)
            }
            let newcomer = try await post("dee", #"{"id":"k15","action":"manage_subscriptions_shown"}"#, as: try DemoCallers.client(as: "dee"))
            #expect(newcomer.status == 404, "\(newcomer.text)")

            for body in [
                #"{"id":"k7","action":"refund_requested","outcome":"requested"}"#,
                #"{"id":"k8","action":"refund_requested","transactionId":"\#(annTx)"}"#,
                #"{"id":"k9","action":"refund_requested","transactionId":"12ab","outcome":"requested"}"#,
                #"{"id":"k10","action":"refund_requested","transactionId":"\#(annTx)","outcome":"granted"}"#,
                #"{"id":"k11","action":"manage_subscriptions_shown","transactionId":"\#(annTx)"}"#,
                #"{"id":"k12","action":"delete_account"}"#,
                #"{"id":"k13","action":"manage_subscriptions_shown","extra":1}"#,
                #"{"id":"","action":"manage_subscriptions_shown"}"#,
                #"{"id":"a b","action":"manage_subscriptions_shown"}"#,
                #"{"id":"\#(String(repeating: "k", count: 65))","action":"manage_subscriptions_shown"}"#,
                #"{"action":"manage_subscriptions_shown"}"#,
                "[]",
            ] {
                let refused = try await post("ann", body, as: ann)
                #expect(refused.status == 400, "\(body): \(refused.text)")
            }
            let annAfter = try await recorded("ann")
            let bobAfter = try await recorded("bob")
            #expect(annAfter.count == 2 && bobAfter.isEmpty, "nothing more recorded")
        }
    }
}
