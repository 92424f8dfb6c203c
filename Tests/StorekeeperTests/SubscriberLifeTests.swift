import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// A subscriber's whole life, played on the simulated App Store and told to the server by every
/// route Apple's facts take (a receipt, a StoreKit 2 transaction, a notification, the Server
/// API), read back as the events a backend sees. Time is the simulator's clock, which the
/// in-process server shares: months pass when the script says so, not on a timer, so the
/// sequence is the same on a busy machine.
@Suite("a subscriber's life as events", .serialized)
struct SubscriberLifeTests {
    /// How Apple's facts about the subscription reach the server after each step.
    enum Route: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Apple's notifications, each once, in the order Apple created them.
        case notifications = "notifications in order"
        /// Each notification twice, and two renewals made in the same instant delivered in the
        /// reverse order.
        case shuffledNotifications = "notifications duplicated and reordered"
        /// No notifications: the app posts its fresh receipt (verifyReceipt answers).
        case receipts = "receipt refreshes"
        /// No notifications: an operator refreshes the subscriber from the Server API.
        case serverAPI = "Server API refreshes"

        var testDescription: String { rawValue }
        var notifies: Bool { self == .notifications || self == .shuffledNotifications }
        var source: PurchaseEvidence.Source {
            switch self {
            case .notifications, .shuffledNotifications: .notification
            case .receipts: .receipt
            case .serverAPI: .serverAPI
            }
        }
    }

    static let month: Double = 300
    static let monthly = "com.example.pro.monthly"

    /// One step of the script: what the server should tell the backend after it.
    struct Expected: Equatable, CustomStringConvertible {
        var type: EventType
        var source: PurchaseEvidence.Source?
        var description: String { "\(type.rawValue)/\(source?.rawValue ?? "-")" }
    }

    @Test(
        "purchase → renewals → billing issue → grace → recovery → auto-renew off/on/off → expiration → refund → reversal, plus one-time products and a Family Sharing revoke: exactly the expected events",
        arguments: WebhookTests.backends, Route.allCases)
    func life(backend: String, route: Route) async throws {
        let receiver = try await WebhookReceiver.start()
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "life") : nil
        do {
            try await withStack(
                secondsPerMonth: Self.month,
                configure: { configuration in
                    configuration.apps[0].serverAPI = .generated()
                    configuration.notificationGapFill.enabled = false
                    if let database { configuration.databasePath = database }
                }, configureSimulator: { $0.gracePeriodSeconds = 3 * Self.month }
            ) { stack in try await play(stack, receiver: receiver, route: route) }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    func play(_ stack: LocalStack, receiver: WebhookReceiver, route: Route) async throws {
        let api = stack.api
        let admin = ["Authorization": "Bearer \(api.adminKey)"]
        let created = try await api.http.send(
            .POST, "/v1/admin/apps/demo/webhooks", headers: admin, body: Data(#"{"url":"\#(receiver.url)"}"#.utf8))
        #expect(created.status == 201, "\(created.text)")
        let user = "life 1/ü"
        var expected: [Expected] = []
        /// Waits until the server has told everything the script did so far, then compares.
        func told(_ step: String, _ more: [Expected], user: String = user) async throws {
            expected += more
            let complete = try await stack.whenSettled {
                guard try await settled(stack) else { return false }
                return try await events(api, user).count >= expected.count
            }
            let seen = try await events(api, user).map { Expected(type: $0.type, source: $0.source) }
            #expect(complete, "after \(step): still waiting for \(expected.count) events; seen \(seen)")
            #expect(seen == expected, "after \(step): \(seen) ≠ \(expected)")
        }
        /// Tells the server what Apple now knows, by the route under test (notifications need
        /// nothing: Apple's sender does it), then compares as `told`.
        func tell(_ step: String, _ types: [EventType], device: UUID, user: String = user) async throws {
            switch route {
            case .notifications, .shuffledNotifications: break
            case .receipts:
                let receipt = try await stack.simulator.receipt(device: device)
                let reply = try await api.postReceipt(appUserId: user, receipt: receipt, refresh: true, wait: TestWait.seconds)
                #expect(reply.status == 200, "\(step): \(reply.text)")
            case .serverAPI:
                let reply = try await api.adminPost("/v1/admin/apps/demo/users/\(StorekeeperClient.pathSegment(user))/refresh?\(TestWait.query)")
                #expect(reply.status == 200, "\(step): \(reply.text)")
            }
            try await told(step, types.map { Expected(type: $0, source: route.source) }, user: user)
        }

        // The subscription is bought and its StoreKit 2 transaction posted before Apple is told
        // where to send notifications: the purchase reaches the server one way only.
        let phone = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let bought = try await stack.simulator.purchase(device: phone, productId: Self.monthly)
        #expect(
            try await api.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction, wait: TestWait.seconds).status == 200)
        // The monthly plan unlocks both of the demo's entitlements (no_ads, then pro: id order).
        try await told(
            "the purchase",
            [
                Expected(type: .initialPurchase, source: .signedTransaction), Expected(type: .entitlementGranted, source: .signedTransaction),
                Expected(type: .entitlementGranted, source: .signedTransaction),
            ])
        if route.notifies { try await stack.sendNotifications() }
        if route == .shuffledNotifications { try await stack.simulator.setNotificationFaults(duplicate: 1_000) }

        // One-time products from a second device: receipts and a StoreKit 2 transaction.
        let tablet = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let unlock = try await stack.simulator.purchase(device: tablet, productId: "com.example.removeads")
        #expect(try await api.postReceipt(appUserId: user, receipt: unlock.receipt, wait: TestWait.seconds).status == 200)
        let coins = try await stack.simulator.purchase(device: tablet, productId: "com.example.coins100")
        #expect(
            try await api.postSignedTransaction(appUserId: user, signedTransaction: coins.signedTransaction, wait: TestWait.seconds).status == 200)
        let pass = try await stack.simulator.purchase(device: tablet, productId: "com.example.season.pass")
        #expect(try await api.postReceipt(appUserId: user, receipt: pass.receipt, wait: TestWait.seconds).status == 200)
        try await told(
            "one-time purchases",
            [
                // The lifetime unlock now stands behind no_ads (no end any more): renewed.
                Expected(type: .nonConsumablePurchase, source: .receipt), Expected(type: .entitlementRenewed, source: .receipt),
                Expected(type: .consumablePurchase, source: .signedTransaction),
                // The season pass (three calendar months) now stands behind pro, ending later
                // than the monthly plan: pro is renewed. From here on pro rests on the pass and
                // no_ads on the lifetime unlock, so the plan's renewals, billing issue, expiry
                // and refund change neither entitlement.
                Expected(type: .nonRenewingPurchase, source: .receipt), Expected(type: .entitlementRenewed, source: .receipt),
            ])

        // Replays: the same receipt again, the same transaction again, and another user's
        // claim on a bound purchase (a conflict for that user, nothing for this one).
        #expect(try await api.postReceipt(appUserId: user, receipt: pass.receipt, refresh: true, wait: TestWait.seconds).status == 200)
        #expect(
            try await api.postSignedTransaction(appUserId: user, signedTransaction: coins.signedTransaction, wait: TestWait.seconds).status == 200)
        for _ in 0..<2 {
            _ = try await api.postSignedTransaction(appUserId: "someone else", signedTransaction: unlock.signedTransaction, wait: TestWait.seconds)
            _ = try await api.postReceipt(appUserId: "someone else", receipt: unlock.receipt, refresh: true, wait: TestWait.seconds)
        }
        try await told("replays", [])
        #expect(try await events(api, "someone else").map(\.type) == [.ownershipConflict], "one conflict, however often it is claimed")

        // Two months pass: Apple renews twice.
        switch route {
        case .shuffledNotifications:
            try await stack.simulator.setNotificationFaults(duplicate: 1_000, reorder: 1)
            try await stack.simulator.advanceClock(seconds: 2 * Self.month + 1)
            try await told("two renewals", Array(repeating: Expected(type: .renewal, source: .notification), count: 2))
        case .notifications:
            try await stack.simulator.advanceClock(seconds: Self.month + 1)
            try await told("the first renewal", [Expected(type: .renewal, source: .notification)])
            try await stack.simulator.advanceClock(seconds: Self.month)
            try await told("the second renewal", [Expected(type: .renewal, source: .notification)])
        case .receipts, .serverAPI:
            try await stack.simulator.advanceClock(seconds: 2 * Self.month + 1)
            try await tell("two renewals", [.renewal, .renewal], device: phone)
        }

        // A third month. With notifications, Apple's is lost and an operator's refresh asks the
        // Server API.
        if route.notifies {
            try await stack.simulator.setNotificationFaults(drop: 1)
            try await stack.simulator.advanceClock(seconds: Self.month)
            #expect(
                try await stack.whenSettled {
                    try await stack.simulator.notifications().filter { $0["notificationType"] as? String == "DID_RENEW" }.count == 3
                })
            if route == .shuffledNotifications { try await stack.simulator.setNotificationFaults(duplicate: 1_000) }
            let refreshed = try await api.adminPost("/v1/admin/apps/demo/users/\(StorekeeperClient.pathSegment(user))/refresh?\(TestWait.query)")
            #expect(refreshed.status == 200, "\(refreshed.text)")
            try await told("the refreshed renewal", [Expected(type: .renewal, source: .serverAPI)])
        } else {
            try await stack.simulator.advanceClock(seconds: Self.month)
            try await tell("the third renewal", [.renewal], device: phone)
        }

        // Billing fails with a grace period; the period ends and grace keeps access; Apple
        // charges after all.
        try await stack.simulator.failBilling(originalTransactionId: bought.originalTransactionId, gracePeriod: true)
        try await tell("the billing failure", [.billingIssue, .gracePeriod], device: phone)
        let periodEnd = try #require(try await api.subscriber(user).subscriptions.first?.expiresDate)
        try await stack.simulator.advanceClock(seconds: periodEnd.timeIntervalSince(stack.clock.now()) + 5)
        #expect(try await api.subscriber(user).subscriptions.first?.status == .inGracePeriod)
        try await stack.simulator.recoverBilling(originalTransactionId: bought.originalTransactionId)
        try await tell("the recovery", [.renewal, .billingRecovered], device: phone)

        // Auto-renew off, on, off; the period runs out.
        for (index, enabled) in [false, true, false].enumerated() {
            let path = "/sim/subscriptions/\(bought.originalTransactionId)/\(enabled ? "resume" : "cancel")-auto-renew"
            #expect(try await stack.simulator.http.send(.POST, path).status == 200)
            try await tell("auto-renew change \(index + 1)", [enabled ? .autoRenewEnabled : .autoRenewDisabled], device: phone)
        }
        let lastEnd = try #require(try await api.subscriber(user).subscriptions.first?.expiresDate)
        try await stack.simulator.advanceClock(seconds: lastEnd.timeIntervalSince(stack.clock.now()) + 5)
        try await tell("the expiry", [.expiration], device: phone)
        #expect(try await api.subscriber(user).subscriptions.first?.status == .expired)

        // Apple refunds the last period, then reverses the refund.
        let periods = try await stack.store.transactions(appId: "demo", appUserId: user).filter {
            $0.originalTransactionId == bought.originalTransactionId
        }
        let lastPeriod = try #require(periods.max { ($0.expiresDate ?? .distantPast) < ($1.expiresDate ?? .distantPast) }?.transactionId)
        try await stack.simulator.refund(transactionId: lastPeriod)
        try await tell("the refund", [.refund], device: phone)
        try await stack.simulator.reverseRefund(transactionId: lastPeriod)
        try await tell("the reversal", [.refundReversed], device: phone)

        // Family Sharing: a member gets the unlock, then loses it (REVOKE).
        let member = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let shared = try await stack.simulator.shareWithFamily(transactionId: unlock.transactionId, member: member)
        #expect(
            try await api.postSignedTransaction(appUserId: "member", signedTransaction: shared.signedTransaction, wait: TestWait.seconds).status
                == 200)
        expected = []
        try await told(
            "the shared purchase",
            [Expected(type: .nonConsumablePurchase, source: .signedTransaction), Expected(type: .entitlementGranted, source: .signedTransaction)],
            user: "member")
        #expect(try await api.subscriber("member").entitlements["no_ads"]?.ownership == .familyShared)
        try await stack.simulator.revoke(transactionId: shared.transactionId)
        try await tell("the revoke", [.revoke, .entitlementRevoked], device: member, user: "member")

        // What the events say matches what was sold, and the backend's webhook got each of them,
        // first seen in sequence order.
        let mine = try await events(api, user)
        #expect(mine.map(\.sequence) == Array(1...Int64(mine.count)))
        let renewals = mine.filter { $0.type == .renewal }.compactMap(\.transactionId)
        #expect(Set(renewals).count == renewals.count && !renewals.contains(bought.transactionId), "each renewal once: \(renewals)")
        #expect(mine.last?.entitlements?.activeEntitlements.contains(Self.monthly) == false)
        #expect(mine.first { $0.type == .expiration }?.details?.expirationReason == "1")
        let all = try await events(api, user) + events(api, "member") + events(api, "someone else")
        let delivered = try await stack.whenSettled { Set(receiver.received.map(\.id)).isSuperset(of: all.map(\.id)) }
        let received = Set(receiver.received.map(\.id))
        #expect(delivered, "not delivered: \(all.filter { !received.contains($0.id) }.map { "\($0.type.rawValue) \($0.id)" })")
        var firstSeen: [String] = []
        for received in receiver.received where received.json["appUserId"] as? String == user && !firstSeen.contains(received.id) {
            firstSeen.append(received.id)
        }
        #expect(firstSeen == mine.map(\.id), "delivered in sequence order")
    }

    /// A subscriber's events, oldest first.
    func events(_ api: StorekeeperClient, _ user: String) async throws -> [SubscriberEvent] {
        let reply = try await api.http.send(
            .GET, "/v1/subscribers/\(StorekeeperClient.pathSegment(user))/events?limit=500", headers: ["Authorization": "Bearer \(api.apiKey)"])
        return try reply.decode(StorekeeperClient.EventPageBody.self).events.map(\.event)
    }

    /// Nothing in flight can still change a subscriber: every notification Apple created was
    /// attempted (a dropped one counts as attempted), none is held back, and every verification
    /// is final.
    func settled(_ stack: LocalStack) async throws -> Bool {
        guard try await stack.simulator.notifications().allSatisfy({ ($0["attempts"] as? [Any])?.isEmpty == false }) else { return false }
        return try await stack.store.verificationCounts().keys.allSatisfy { $0.isFinal || $0 == .configurationError }
    }
}
