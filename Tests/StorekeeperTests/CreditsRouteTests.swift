import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Spending credits over real HTTP: coins bought through the simulator, spent by the backend
/// and (where the app allows it) by the user's own app; each refusal an attacker or a buggy
/// client would meet.
@Suite("credits: spending and history")
struct CreditsRouteTests {
    static func spend(
        _ stack: LocalStack, _ user: String, amount: Int, reason: String = "sword", key: String?, as headers: [String: String] = DemoCallers.backend
    ) async throws -> HTTPJSONClient.Reply {
        var headers = headers
        if let key { headers["Idempotency-Key"] = key }
        // A generous timeout: a thousand spends of one user queue behind each other on a busy machine.
        return try await stack.api.http.send(
            .POST, "/v1/subscribers/\(user)/credits/spend", headers: headers, body: Data(#"{"amount":\#(amount),"reason":"\#(reason)"}"#.utf8),
            timeout: 600)
    }

    /// `packs` purchases of 100 coins, granted to `user`.
    static func buyCoins(_ stack: LocalStack, _ user: String, packs: Int) async throws -> [SimulatorClient.Purchase] {
        let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        var bought: [SimulatorClient.Purchase] = []
        for _ in 0..<packs {
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: user, signedTransaction: coins.signedTransaction, wait: TestWait.seconds).status
                    == 200)
            bought.append(coins)
        }
        return bought
    }

    @Test("the backend spends: the balance falls, a retry with the same key spends nothing, an overspend is refused with the balance")
    func spendReplayOverspend() async throws {
        try await withStack { stack in
            let receiver = try await WebhookReceiver.start()
            defer { Task { await receiver.stop() } }
            let created = try await stack.api.http.send(
                .POST, "/v1/admin/apps/demo/webhooks", headers: ["Authorization": "Bearer \(stack.api.adminKey)"],
                body: Data(#"{"url":"\#(receiver.url)","eventTypes":["credits_spent"]}"#.utf8))
            #expect(created.status == 201, "\(created.text)")
            _ = try await Self.buyCoins(stack, "alice", packs: 2)
            #expect(try await stack.api.subscriber("alice").creditBalance == 200)

            let first = try await Self.spend(stack, "alice", amount: 70, key: "spend-1")
            #expect(first.status == 200 && first.json["balance"] as? Int == 130 && first.json["replayed"] as? Bool == false, "\(first.text)")
            let spend = try #require(first.json["spend"] as? [String: Any])
            #expect(spend["id"] as? String == "spend-1" && spend["amount"] as? Int == 70 && spend["reason"] as? String == "sword")
            let again = try await Self.spend(stack, "alice", amount: 70, key: "spend-1")
            #expect(again.status == 200 && again.json["replayed"] as? Bool == true && again.json["balance"] as? Int == 130, "\(again.text)")
            let reused = try await Self.spend(stack, "alice", amount: 5, key: "spend-1")
            #expect(reused.status == 409 && reused.errorCode == "idempotency_key_reused", "\(reused.text)")
            // A key is its user's own: bob's spend under alice's key is his, refused for his balance
            // (he has no coins), and tells him nothing of alice's.
            let elsewhere = try await Self.spend(stack, "bob", amount: 70, key: "spend-1")
            #expect(elsewhere.status == 409 && elsewhere.errorCode == "insufficient_credits", "\(elsewhere.text)")
            #expect((elsewhere.json["error"] as? [String: Any])?["balance"] as? Int == 0)

            let over = try await Self.spend(stack, "alice", amount: 131, key: "spend-2")
            #expect(over.status == 409 && over.errorCode == "insufficient_credits", "\(over.text)")
            #expect((over.json["error"] as? [String: Any])?["balance"] as? Int == 130)
            let exact = try await Self.spend(stack, "alice", amount: 130, key: "spend-2")
            #expect(exact.status == 200 && exact.json["balance"] as? Int == 0, "a refused key may be used once the spend can be made")
            let view = try await stack.api.subscriber("alice")
            #expect(view.creditBalance == 0 && view.creditsSpent == 200)

            let history = try await stack.api.http.send(.GET, "/v1/subscribers/alice/credits?limit=1", headers: DemoCallers.backend)
            #expect(history.status == 200 && history.json["balance"] as? Int == 0, "\(history.text)")
            #expect(history.json["purchased"] as? Int == 200 && history.json["spent"] as? Int == 200)
            let page = try #require(history.json["spends"] as? [[String: Any]])
            #expect(page.map { $0["id"] as? String } == ["spend-2"], "newest first")
            let next = try #require((history.json["nextBefore"] as? NSNumber)?.int64Value)
            let older = try await stack.api.http.send(.GET, "/v1/subscribers/alice/credits?limit=1&before=\(next)", headers: DemoCallers.backend)
            #expect((older.json["spends"] as? [[String: Any]])?.map { $0["id"] as? String } == ["spend-1"])

            // One event per spend, never for a replay; each delivered as a webhook.
            let events = try await stack.store.events(appId: "demo", after: 0, types: [.creditsSpent], limit: 100).map(\.event)
            #expect(events.map { $0.details?.spendId } == ["spend-1", "spend-2"] && events.map { $0.details?.creditBalance } == [130, 0])
            #expect(events.last?.entitlements?.creditBalance == 0, "the event's view has the spend taken")
            #expect(await receiver.receivedAtLeast(2) && receiver.received.count == 2, "\(receiver.received.count) webhooks")
            #expect(Set(receiver.received.map { $0.json["type"] as? String }) == ["credits_spent"])

            // Bob takes the key alice's next spend will use, first: hers is still made, once.
            _ = try await Self.buyCoins(stack, "bob", packs: 1)
            let bobFirst = try await Self.spend(stack, "bob", amount: 10, key: "spend-9")
            #expect(bobFirst.status == 200 && bobFirst.json["balance"] as? Int == 90, "\(bobFirst.text)")
            _ = try await Self.buyCoins(stack, "alice", packs: 1)
            let aliceAfter = try await Self.spend(stack, "alice", amount: 10, key: "spend-9")
            #expect(aliceAfter.status == 200 && aliceAfter.json["replayed"] as? Bool == false, "\(aliceAfter.text)")
            #expect(aliceAfter.json["balance"] as? Int == 90)
        }
    }

    @Test("refused: no or a malformed idempotency key, bad amounts and reasons, unknown fields, a client without spendCredits, another user's token")
    func refusals() async throws {
        try await withStack { stack in
            _ = try await Self.buyCoins(stack, "alice", packs: 1)
            #expect(try await Self.spend(stack, "alice", amount: 1, key: nil).status == 400)
            for key in ["", "has space", String(repeating: "k", count: 256), "ключ"] {
                let reply = try await Self.spend(stack, "alice", amount: 1, key: key)
                #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(key): \(reply.text)")
            }
            for body in [
                #"{"amount":0,"reason":"x"}"#, #"{"amount":-5,"reason":"x"}"#, #"{"amount":1.5,"reason":"x"}"#, #"{"amount":"1","reason":"x"}"#,
                #"{"amount":1000000001,"reason":"x"}"#, #"{"amount":99999999999999999999,"reason":"x"}"#, #"{"amount":1,"reason":"  "}"#,
                #"{"amount":1}"#, #"{"reason":"x"}"#, #"{"amount":1,"reason":"x","balance":500}"#, "[]", "{",
            ] {
                let reply = try await stack.api.http.send(
                    .POST, "/v1/subscribers/alice/credits/spend", headers: DemoCallers.backend.merging(["Idempotency-Key": "k"]) { $1 },
                    body: Data(body.utf8))
                #expect(reply.status == 400, "\(body): \(reply.text)")
                // Only bytes that are not JSON are called so; a number that does not fit is a bad field.
                #expect(reply.errorCode == (body == "{" ? "invalid_json" : "invalid_request"), "\(body): \(reply.text)")
            }
            let client = try await Self.spend(stack, "alice", amount: 1, key: "c1", as: try DemoCallers.client(as: "alice"))
            #expect(client.status == 403 && client.errorCode == "client_key_not_allowed", "the demo app spends from its backend: \(client.text)")
            #expect(try await stack.api.subscriber("alice").creditBalance == 100, "nothing spent by any refusal")
        }
        try await withStack(configure: { $0.apps[0].client?.spendCredits = true }) { stack in
            _ = try await Self.buyCoins(stack, "alice", packs: 1)
            let mine = try await Self.spend(stack, "alice", amount: 10, key: "u1", as: try DemoCallers.client(as: "alice"))
            #expect(mine.status == 200 && mine.json["balance"] as? Int == 90, "\(mine.text)")
            let theirs = try await Self.spend(stack, "alice", amount: 10, key: "u2", as: try DemoCallers.client(as: "mallory"))
            #expect(theirs.status == 403 && theirs.errorCode == "other_user", "\(theirs.text)")
            let anonymous = try await Self.spend(stack, "alice", amount: 10, key: "u3", as: DemoCallers.anonymous)
            #expect(anonymous.status == 401, "\(anonymous.text)")
            let history = try await stack.api.http.send(.GET, "/v1/subscribers/alice/credits", headers: try DemoCallers.client(as: "mallory"))
            #expect(history.status == 403 && history.errorCode == "other_user")
            for query in ["limit=0", "limit=1001", "limit=x", "before=0", "before=-1"] {
                let reply = try await stack.api.http.send(.GET, "/v1/subscribers/alice/credits?\(query)", headers: DemoCallers.backend)
                #expect(reply.status == 400, "\(query): \(reply.text)")
            }
            #expect(try await stack.api.subscriber("alice").creditBalance == 90)
        }
    }

    @Test("a refund of coins already spent takes the balance below zero (documented), and spends are refused until purchases lift it")
    func refundOfSpentCredits() async throws {
        try await withStack { stack in
            try await stack.sendNotifications()
            let bought = try await Self.buyCoins(stack, "alice", packs: 2)
            #expect(try await Self.spend(stack, "alice", amount: 150, key: "big").status == 200)
            try await stack.simulator.refund(transactionId: bought[0].transactionId)
            #expect(try await stack.whenSettled { try await stack.api.subscriber("alice").creditBalance == -50 }, "the refund takes back 100 credits")
            let refused = try await Self.spend(stack, "alice", amount: 1, key: "small")
            #expect(refused.status == 409 && (refused.json["error"] as? [String: Any])?["balance"] as? Int == -50, "\(refused.text)")
            _ = try await Self.buyCoins(stack, "alice", packs: 1)
            let after = try await Self.spend(stack, "alice", amount: 50, key: "small")
            #expect(after.status == 200 && after.json["balance"] as? Int == 0, "\(after.text)")
        }
    }

    @Test("1,000 spends of one credit against 600, 200 at a time: exactly 600 spent, the rest refused, a replay of each changes nothing")
    func concurrentSpends() async throws {
        try await withStack { stack in
            _ = try await Self.buyCoins(stack, "alice", packs: 6)
            // 200 in flight at a time, below the client's 256 connections (`inLanes`).
            let statuses = try await inLanes(0..<1_000, lanes: 200) { i in try await Self.spend(stack, "alice", amount: 1, key: "c-\(i)").status }
                .reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            #expect(statuses == [200: 600, 409: 400], "\(statuses)")
            #expect(try await stack.api.subscriber("alice").creditBalance == 0)
            #expect(try await stack.store.creditsSpent(appId: "demo", appUserId: "alice") == 600)
            let replays = try await inLanes(0..<1_000, lanes: 200) { i in try await Self.spend(stack, "alice", amount: 1, key: "c-\(i)").status }
                .reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            #expect(replays == [200: 600, 409: 400], "the 600 spent answer as before; the refused stay refused at 0: \(replays)")
            #expect(try await stack.store.events(appId: "demo", after: 0, types: [.creditsSpent], limit: 2_000).count == 600)
        }
    }
}
