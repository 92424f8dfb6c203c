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
    /// How Apple's notifications reach the server.
    enum Delivery: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Each once, in the order Apple created them.
        case inOrder = "in order"
        /// Each twice, and two renewals made in the same instant delivered in the reverse order.
        case duplicatedAndReordered = "duplicated and reordered"

        var testDescription: String { rawValue }
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
        arguments: WebhookTests.backends, Delivery.allCases)
    func life(backend: String, delivery: Delivery) async throws {
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
            ) { stack in try await play(stack, receiver: receiver, delivery: delivery) }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    func play(_ stack: LocalStack, receiver: WebhookReceiver, delivery: Delivery) async throws {
        let api = stack.api
        let admin = ["Authorization": "Bearer \(api.adminKey)"]
        let created = try await api.http.send(
            .POST, "/v1/admin/apps/demo/webhooks", headers: admin, body: Data(#"{"url":"\#(receiver.url)"}"#.utf8))
        #expect(created.status == 201, "\(created.text)")
        let user = "life 1/ü"
        var expected: [Expected] = []
        /// Waits until the server has told everything the script did so far, then compares.
        func told(_ step: String, _ more: [Expected]) async throws {
            expected += more
            let complete = try await eventually(timeout: 60) {
                guard try await settled(stack) else { return false }
                return try await events(api, user).count >= expected.count
            }
            let seen = try await events(api, user).map { Expected(type: $0.type, source: $0.source) }
            #expect(complete, "after \(step): still waiting for \(expected.count) events; seen \(seen)")
            #expect(seen == expected, "after \(step): \(seen) ≠ \(expected)")
        }

        // The subscription is bought and its StoreKit 2 transaction posted before Apple is told
        // where to send notifications: the purchase reaches the server one way only.
        let phone = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let bought = try await stack.simulator.purchase(device: phone, productId: Self.monthly)
        #expect(try await api.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction, wait: 30).status == 200)
        try await told("the purchase", [Expected(type: .initialPurchase, source: .signedTransaction)])
        try await stack.sendNotifications()
        if delivery == .duplicatedAndReordered { try await stack.simulator.setNotificationFaults(duplicate: 1_000) }

        // One-time products from a second device: receipts and a StoreKit 2 transaction.
        let tablet = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let unlock = try await stack.simulator.purchase(device: tablet, productId: "com.example.removeads")
        #expect(try await api.postReceipt(appUserId: user, receipt: unlock.receipt, wait: 30).status == 200)
        let coins = try await stack.simulator.purchase(device: tablet, productId: "com.example.coins100")
        #expect(try await api.postSignedTransaction(appUserId: user, signedTransaction: coins.signedTransaction, wait: 30).status == 200)
        let pass = try await stack.simulator.purchase(device: tablet, productId: "com.example.season.pass")
        #expect(try await api.postReceipt(appUserId: user, receipt: pass.receipt, wait: 30).status == 200)
        try await told(
            "one-time purchases",
            [
                Expected(type: .nonConsumablePurchase, source: .receipt), Expected(type: .consumablePurchase, source: .signedTransaction),
                Expected(type: .nonRenewingPurchase, source: .receipt),
            ])

        // Replays: the same receipt again, the same transaction again, and another user's
        // claim on a bound purchase (a conflict for that user, nothing for this one).
        #expect(try await api.postReceipt(appUserId: user, receipt: pass.receipt, refresh: true, wait: 30).status == 200)
        #expect(try await api.postSignedTransaction(appUserId: user, signedTransaction: coins.signedTransaction, wait: 30).status == 200)
        for _ in 0..<2 {
            _ = try await api.postSignedTransaction(appUserId: "someone else", signedTransaction: unlock.signedTransaction, wait: 30)
        }
        try await told("replays", [])
        #expect(try await events(api, "someone else").map(\.type) == [.ownershipConflict], "one conflict, however often it is claimed")

        // Two months pass: Apple renews twice (DID_RENEW each).
        if delivery == .duplicatedAndReordered {
            try await stack.simulator.setNotificationFaults(duplicate: 1_000, reorder: 1)
            try await stack.simulator.advanceClock(seconds: 2 * Self.month + 1)
        } else {
            try await stack.simulator.advanceClock(seconds: Self.month + 1)
            try await told("the first renewal", [Expected(type: .renewal, source: .notification)])
            try await stack.simulator.advanceClock(seconds: Self.month)
        }
        try await told("two renewals", Array(repeating: Expected(type: .renewal, source: .notification), count: delivery == .inOrder ? 1 : 2))

        // A third month: Apple's notification is lost; an operator's refresh asks the Server API.
        try await stack.simulator.setNotificationFaults(drop: 1)
        try await stack.simulator.advanceClock(seconds: Self.month)
        #expect(
            try await eventually { try await stack.simulator.notifications().filter { $0["notificationType"] as? String == "DID_RENEW" }.count == 3 })
        if delivery == .duplicatedAndReordered { try await stack.simulator.setNotificationFaults(duplicate: 1_000) }
        let refreshed = try await api.adminPost("/v1/admin/apps/demo/users/\(StorekeeperClient.pathSegment(user))/refresh?wait=30")
        #expect(refreshed.status == 200, "\(refreshed.text)")
        try await told("the refreshed renewal", [Expected(type: .renewal, source: .serverAPI)])

        // Billing fails with a grace period; the period ends and grace keeps access; Apple
        // charges after all.
        try await stack.simulator.failBilling(originalTransactionId: bought.originalTransactionId, gracePeriod: true)
        try await told(
            "the billing failure", [Expected(type: .billingIssue, source: .notification), Expected(type: .gracePeriod, source: .notification)])
        let periodEnd = try #require(try await api.subscriber(user).subscriptions.first?.expiresDate)
        try await stack.simulator.advanceClock(seconds: periodEnd.timeIntervalSince(stack.clock.now()) + 5)
        #expect(try await api.subscriber(user).subscriptions.first?.status == .inGracePeriod)
        try await stack.simulator.recoverBilling(originalTransactionId: bought.originalTransactionId)
        try await told(
            "the recovery", [Expected(type: .renewal, source: .notification), Expected(type: .billingRecovered, source: .notification)])

        // Auto-renew off, on, off; the period runs out.
        for (index, enabled) in [false, true, false].enumerated() {
            let path = "/sim/subscriptions/\(bought.originalTransactionId)/\(enabled ? "resume" : "cancel")-auto-renew"
            #expect(try await stack.simulator.http.send(.POST, path).status == 200)
            try await told(
                "auto-renew change \(index + 1)", [Expected(type: enabled ? .autoRenewEnabled : .autoRenewDisabled, source: .notification)])
        }
        let lastEnd = try #require(try await api.subscriber(user).subscriptions.first?.expiresDate)
        try await stack.simulator.advanceClock(seconds: lastEnd.timeIntervalSince(stack.clock.now()) + 5)
        try await told("the expiry", [Expected(type: .expiration, source: .notification)])
        #expect(try await api.subscriber(user).subscriptions.first?.status == .expired)

        // Apple refunds the last period, then reverses the refund.
        let periods = try await stack.store.transactions(appId: "demo", appUserId: user).filter {
            $0.originalTransactionId == bought.originalTransactionId
        }
        let lastPeriod = try #require(periods.max { ($0.expiresDate ?? .distantPast) < ($1.expiresDate ?? .distantPast) }?.transactionId)
        try await stack.simulator.refund(transactionId: lastPeriod)
        try await told("the refund", [Expected(type: .refund, source: .notification)])
        try await stack.simulator.reverseRefund(transactionId: lastPeriod)
        try await told("the reversal", [Expected(type: .refundReversed, source: .notification)])

        // Family Sharing: a member gets the unlock, then loses it (REVOKE).
        let member = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let shared = try await stack.simulator.shareWithFamily(transactionId: unlock.transactionId, member: member)
        #expect(try await api.postSignedTransaction(appUserId: "member", signedTransaction: shared.signedTransaction, wait: 30).status == 200)
        try await stack.simulator.revoke(transactionId: shared.transactionId)
        #expect(
            try await eventually {
                guard try await settled(stack) else { return false }
                return try await events(api, "member").count >= 2
            })
        let memberEvents = try await events(api, "member")
        #expect(memberEvents.map(\.type) == [.nonConsumablePurchase, .revoke] && memberEvents.map(\.source) == [.signedTransaction, .notification])

        // What the events say matches what was sold, and the backend's webhook got each of them,
        // first seen in sequence order.
        let mine = try await events(api, user)
        #expect(mine.map(\.sequence) == Array(1...Int64(mine.count)))
        let renewals = mine.filter { $0.type == .renewal }.compactMap(\.transactionId)
        #expect(Set(renewals).count == renewals.count && !renewals.contains(bought.transactionId), "each renewal once: \(renewals)")
        #expect(mine.last?.entitlements?.activeEntitlements.contains(Self.monthly) == false)
        #expect(mine.first { $0.type == .expiration }?.details?.expirationReason == "1")
        let all = try await events(api, user) + events(api, "member") + events(api, "someone else")
        #expect(try await eventually { Set(receiver.received.map(\.id)).isSuperset(of: all.map(\.id)) })
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
