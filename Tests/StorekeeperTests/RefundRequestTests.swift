import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Refund requests answered by policy, over real HTTP: the simulator plays the customer asking
/// Apple for a refund (CONSUMPTION_REQUEST), checks the answer as Apple does and decides by it;
/// time moves on the simulator's clock, never by sleeping.
@Suite("refund requests: answered by the app's policy")
struct RefundRequestTests {
    static func withPolicy<T>(_ policy: RefundPolicy, _ body: (LocalStack) async throws -> T) async throws -> T {
        try await withStack(
            configure: {
                $0.apps[0].serverAPI = .generated()
                $0.apps[0].refundRequests = policy
            },
            { stack in
                try await stack.sendNotifications()
                return try await body(stack)
            })
    }

    /// The stored request for `transactionId`, once it has left `pending`.
    static func answered(_ stack: LocalStack, _ transactionId: String) async throws -> [String: Any]? {
        var found: [String: Any]?
        let ended = try await stack.whenSettled {
            let reply = try await stack.api.adminGet("/v1/admin/apps/demo/refund-requests?transactionId=\(transactionId)")
            found = (reply.json["requests"] as? [[String: Any]])?.first
            return found.map { $0["state"] as? String != "pending" } ?? false
        }
        return ended ? found : nil
    }

    static func buy(_ stack: LocalStack, _ productId: String, for user: String = "alice") async throws -> SimulatorClient.Purchase {
        let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let bought = try await stack.simulator.purchase(device: device, productId: productId)
        #expect(
            try await stack.api.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction, wait: TestWait.seconds).status
                == 200)
        return bought
    }

    static func notified(_ stack: LocalStack, _ type: String, _ transactionId: String) async throws -> Bool {
        try await stack.whenSettled {
            try await stack.simulator.notifications().contains {
                $0["notificationType"] as? String == type && $0["transactionId"] as? String == transactionId && $0["delivered"] as? Bool == true
            }
        }
    }

    @Test("rules, coins partly spent: the answer says delivered, 30% consumed, decline; Apple declines and the coins stay")
    func declineWhenSpent() async throws {
        try await Self.withPolicy(RefundPolicy(mode: .rules, customersConsented: true)) { stack in
            let coins = try await Self.buy(stack, "com.example.coins100")
            let spend = try await stack.api.http.send(
                .POST, "/v1/subscribers/alice/credits/spend", headers: DemoCallers.backend.merging(["Idempotency-Key": "s1"]) { $1 },
                body: Data(#"{"amount":30,"reason":"sword"}"#.utf8))
            #expect(spend.status == 200, "\(spend.text)")
            try await stack.simulator.requestRefund(transactionId: coins.transactionId, reason: "UNSATISFIED_WITH_PURCHASE")

            let request = try #require(try await Self.answered(stack, coins.transactionId))
            #expect(request["state"] as? String == "sent" && request["note"] as? String == "credits_spent", "\(request)")
            #expect(request["reason"] as? String == "UNSATISFIED_WITH_PURCHASE" && request["appUserId"] as? String == "alice")
            let sent = try #require(try await stack.simulator.consumptionV2(transactionId: coins.transactionId), "Apple received the answer")
            #expect(sent["customerConsented"] as? Bool == true && sent["deliveryStatus"] as? String == "DELIVERED")
            #expect(sent["consumptionPercentage"] as? Int == 30_000 && sent["refundPreference"] as? String == "DECLINE", "\(sent)")
            #expect(sent["sampleContentProvided"] as? Bool == false)
            #expect(try await Self.notified(stack, "REFUND_DECLINED", coins.transactionId), "Apple declined")
            #expect(try await stack.api.subscriber("alice").creditBalance == 70, "the coins stay")

            let events = try await stack.store.events(appId: "demo", after: 0, types: [.refundRequested, .refundRequestAnswered], limit: 10)
                .map(\.event)
            #expect(events.map(\.type) == [.refundRequested, .refundRequestAnswered] && events.allSatisfy { $0.appUserId == "alice" })
            #expect(events.last?.details?.refundPreference == "DECLINE" && events.last?.details?.reason == "credits_spent")
        }
    }

    @Test("prefer grant: the answer prefers a full refund; Apple refunds and the purchase is revoked")
    func preferGrant() async throws {
        try await Self.withPolicy(RefundPolicy(mode: .preferGrant, customersConsented: true)) { stack in
            let unlock = try await Self.buy(stack, "com.example.removeads")
            try await stack.simulator.requestRefund(transactionId: unlock.transactionId)
            let request = try #require(try await Self.answered(stack, unlock.transactionId))
            #expect(request["state"] as? String == "sent" && request["note"] as? String == "prefer_grant", "\(request)")
            let sent = try #require(try await stack.simulator.consumptionV2(transactionId: unlock.transactionId))
            #expect(sent["refundPreference"] as? String == "GRANT_FULL" && sent["consumptionPercentage"] == nil, "\(sent)")
            #expect(
                try await stack.whenSettled {
                    try await !stack.api.subscriber("alice").activeEntitlements.contains("com.example.removeads")
                }, "refunded and revoked")
        }
    }

    @Test("policy off: the request is recorded and nothing is sent; Apple decides alone at the deadline")
    func policyOff() async throws {
        try await Self.withPolicy(RefundPolicy(mode: .off)) { stack in
            let unlock = try await Self.buy(stack, "com.example.removeads")
            try await stack.simulator.requestRefund(transactionId: unlock.transactionId)
            let request = try #require(try await Self.answered(stack, unlock.transactionId))
            #expect(request["state"] as? String == "skipped" && request["note"] as? String == "policy_off", "\(request)")
            #expect(try await stack.simulator.consumptionV2(transactionId: unlock.transactionId) == nil, "nothing sent")
            try await stack.simulator.advanceClock(seconds: RefundRequest.answerWindow + 60)
            #expect(try await Self.notified(stack, "REFUND", unlock.transactionId), "Apple refunds at its deadline")
            #expect(try await stack.simulator.consumptionV2(transactionId: unlock.transactionId) == nil)
        }
    }

    @Test("v2 not there (a bare 404): the same answer sent as v1, and Apple decides by it")
    func versionOne() async throws {
        try await Self.withPolicy(RefundPolicy(mode: .preferDecline, customersConsented: true)) { stack in
            let coins = try await Self.buy(stack, "com.example.coins100")
            let faults = try await stack.simulator.http.send(.PUT, "/sim/server-api/faults", body: Data(#"{"consumptionV2Missing":true}"#.utf8))
            #expect(faults.status == 200, "\(faults.text)")
            try await stack.simulator.requestRefund(transactionId: coins.transactionId)
            let request = try #require(try await Self.answered(stack, coins.transactionId))
            #expect(request["state"] as? String == "sent" && request["note"] as? String == "prefer_decline (v1)", "\(request)")
            #expect(try await stack.simulator.consumptionV2(transactionId: coins.transactionId) == nil)
            let v1 = try await stack.simulator.http.send(.GET, "/sim/consumption/\(coins.transactionId)")
            #expect(v1.status == 200, "\(v1.text)")
            #expect(v1.json["refundPreference"] as? Int == 2 && v1.json["customerConsented"] as? Bool == true, "\(v1.text)")
            #expect(v1.json["deliveryStatus"] as? Int == 0 && v1.json["consumptionStatus"] as? Int == 1 && v1.json["platform"] as? Int == 1)
            #expect(try await Self.notified(stack, "REFUND_DECLINED", coins.transactionId))
        }
    }

    @Test("Apple failing: retried until it answers, before the deadline; failing to the end: expired at the deadline, nothing sent")
    func retriedThenExpired() async throws {
        try await Self.withPolicy(RefundPolicy(mode: .preferDecline, customersConsented: true)) { stack in
            let first = try await Self.buy(stack, "com.example.removeads")
            let second = try await Self.buy(stack, "com.example.season.pass", for: "bob")
            try await stack.simulator.setServerAPIFaults(down: true)
            try await stack.simulator.requestRefund(transactionId: first.transactionId)
            try await stack.simulator.requestRefund(transactionId: second.transactionId)
            func retries() async throws -> Double {
                let text = try await stack.api.http.send(.GET, "/metrics").text
                let line = text.split(separator: "\n").first { $0.hasPrefix("storekeeper_refund_requests_total") && $0.contains("outcome=\"retry\"") }
                return line.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } } ?? 0
            }
            #expect(try await stack.whenSettled { try await retries() >= 2 }, "both answers met Apple's outage")
            #expect(try await stack.simulator.consumptionV2(transactionId: first.transactionId) == nil)

            // Apple answers again within the hour: the first is sent on its next attempt.
            try await stack.simulator.setServerAPIFaults(down: false)
            try await stack.simulator.advanceClock(seconds: 3_600)
            let sent = try #require(try await Self.answered(stack, first.transactionId))
            #expect(sent["state"] as? String == "sent", "\(sent)")
            #expect(try await stack.simulator.consumptionV2(transactionId: first.transactionId)?["refundPreference"] as? String == "DECLINE")
            #expect(try await Self.answered(stack, second.transactionId)?["state"] as? String == "sent")
        }
        try await Self.withPolicy(RefundPolicy(mode: .preferDecline, customersConsented: true)) { stack in
            let unlock = try await Self.buy(stack, "com.example.removeads")
            try await stack.simulator.setServerAPIFaults(down: true)
            try await stack.simulator.requestRefund(transactionId: unlock.transactionId)
            // Apple's notification is signed when it is sent; the deadline runs from then.
            #expect(try await Self.notified(stack, "CONSUMPTION_REQUEST", unlock.transactionId))
            try await stack.simulator.advanceClock(seconds: RefundRequest.answerWindow + 60)
            let expired = try #require(try await Self.answered(stack, unlock.transactionId))
            #expect(expired["state"] as? String == "expired" && expired["note"] as? String == "deadline_passed", "\(expired)")
            #expect(try await stack.simulator.consumptionV2(transactionId: unlock.transactionId) == nil, "nothing sent after the deadline")
        }
    }
}
