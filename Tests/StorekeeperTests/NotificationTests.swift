import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// App Store Server Notifications V2 over HTTP, signed by the simulator's chain as Apple signs them.
@Suite("App Store Server Notifications V2")
struct NotificationTests {
    func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    func json(_ object: [String: Any]) throws -> [UInt8] { Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) }

    /// A signed V2 notification of `type` carrying `transaction` (a signed transaction payload).
    func notification(
        _ stack: LocalStack, type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), signedAt: Date,
        transaction: [String: Any]?, renewal: [String: Any]? = nil, bundleId: String = demoBundle, appAppleId: Int64?? = nil,
        environment: String = "Production"
    ) throws -> String {
        var data: [String: Any] = ["bundleId": bundleId, "environment": environment, "bundleVersion": "1"]
        // Apple names the app by its Apple id in production; the demo app has one. `.some(nil)`: none.
        if let appAppleId = appAppleId ?? (environment == "Production" && bundleId == demoBundle ? DemoConfiguration.appAppleId : nil) {
            data["appAppleId"] = appAppleId
        }
        if let transaction { data["signedTransactionInfo"] = try stack.simulatorPKI.signJWS(payload: try json(transaction)) }
        if let renewal { data["signedRenewalInfo"] = try stack.simulatorPKI.signJWS(payload: try json(renewal)) }
        var outer: [String: Any] = ["notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": ms(signedAt), "data": data]
        if let subtype { outer["subtype"] = subtype }
        return try stack.simulatorPKI.signJWS(payload: try json(outer))
    }

    func transaction(id: String, original: String, purchased: Date, expires: Date, revoked: Date? = nil) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "bundleId": demoBundle, "productId": "com.example.pro.monthly",
            "purchaseDate": ms(purchased), "originalPurchaseDate": ms(purchased), "expiresDate": ms(expires), "quantity": 1,
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "signedDate": ms(Date()),
            "environment": "Production", "price": 4990, "currency": "USD",
        ]
        if let revoked {
            payload["revocationDate"] = ms(revoked)
            payload["revocationReason"] = 0
        }
        return payload
    }

    @Test("a renewal is granted to the owner; a duplicate delivery changes nothing; a refund revokes; a late renewal does not undo it")
    func renewalRefundOrder() async throws {
        try await withStack { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds).status
                    == 200)
            let original = bought.originalTransactionId
            let now = Date()
            let renewal = transaction(id: "renewal-1", original: original, purchased: now, expires: now.addingTimeInterval(600))
            let didRenew = try notification(stack, type: "DID_RENEW", signedAt: now, transaction: renewal)

            let first = try await api.postNotification(signedPayload: didRenew)
            #expect(first.status == 200 && first.json["outcome"] as? String == "submitted", "\(first.text)")
            let verified = try await api.waitForFinal(try #require(first.json["verificationId"] as? String))
            #expect(verified["state"] as? String == "verified")
            #expect((verified["grant"] as? [String: Any])?["granted"] as? [String] == ["renewal-1"])
            let again = try await api.postNotification(signedPayload: didRenew)
            #expect(again.status == 200 && again.json["duplicate"] as? Bool == true && again.json["verificationId"] == nil)
            #expect(try await stack.store.countTransactions(appId: "demo") == 2)
            #expect(try await api.subscriber("alice").subscriptions.first?.expiresDate.map { $0 > now.addingTimeInterval(500) } == true)

            // Apple refunds the renewal.
            let refunded = transaction(
                id: "renewal-1", original: original, purchased: now, expires: now.addingTimeInterval(600), revoked: now.addingTimeInterval(5))
            let refund = try await api.postNotification(
                signedPayload: try notification(stack, type: "REFUND", signedAt: now.addingTimeInterval(10), transaction: refunded))
            let refundResult = try await api.waitForFinal(try #require(refund.json["verificationId"] as? String))
            #expect((refundResult["grant"] as? [String: Any])?["revoked"] as? [String] == ["renewal-1"], "\(refundResult)")

            // The DID_RENEW arrives once more, late, under another UUID: the refund stands.
            let late = try await api.postNotification(
                signedPayload: try notification(stack, type: "DID_RENEW", signedAt: now.addingTimeInterval(1), transaction: renewal))
            #expect(late.status == 200 && late.json["duplicate"] as? Bool == false)
            if let id = late.json["verificationId"] as? String { _ = try await api.waitForFinal(id) }
            let renewed = try await stack.store.transactions(appId: "demo", appUserId: "alice").first { $0.transactionId == "renewal-1" }
            #expect(renewed?.cancellationDate != nil, "a late renewal does not undo the refund")
            let subscription = try #require(try await api.subscriber("alice").subscriptions.first)
            #expect(!subscription.isActive && subscription.status == .revoked, "\(subscription)")
            let ledger = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture))
            #expect(ledger.filter { $0.event == .purchase }.count == 2 && ledger.filter { $0.event == .refund }.count == 1)

            // One event per change, over HTTP: the duplicate and the late renewal added none.
            let feed = try await api.events("?types=initial_purchase,renewal,refund")
            #expect(feed.map(\.event.type) == [.initialPurchase, .renewal, .refund], "\(feed.map(\.event.type))")
            #expect(feed.map(\.event.source) == [.signedTransaction, .notification, .notification])
            #expect(feed.map(\.event.transactionId) == [bought.transactionId, "renewal-1", "renewal-1"])
            let all = try await api.events("")
            #expect(all.map(\.event.sequence) == Array(1...Int64(all.count)), "one subscriber, numbered in order")
            #expect(all.last?.event.entitlements?.subscriptions.first?.status == .revoked)
        }
    }

    @Test("an endpoint that takes notifications gets each one as Apple sent it, once, after it was stored")
    func forwarded() async throws {
        let receiver = try await WebhookReceiver.start()
        do {
            try await withStack { stack in
                let api = stack.api
                let created = try await api.http.send(
                    .POST, "/v1/admin/apps/demo/webhooks", headers: ["Authorization": "Bearer \(api.adminKey)"],
                    body: Data(#"{"url":"\#(receiver.url)","appStoreNotifications":true}"#.utf8))
                #expect(created.status == 201 && (created.json["endpoint"] as? [String: Any])?["appStoreNotifications"] as? Bool == true)
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
                #expect(
                    try await api.postSignedTransaction(appUserId: "ivy", signedTransaction: bought.signedTransaction, wait: TestWait.seconds).status
                        == 200)
                let now = Date()
                let renewal = transaction(
                    id: "renewal-f", original: bought.originalTransactionId, purchased: now, expires: now.addingTimeInterval(600))
                let signed = try notification(stack, type: "DID_RENEW", signedAt: now, transaction: renewal)
                #expect(try await api.postNotification(signedPayload: signed).status == 200)
                #expect(try await api.postNotification(signedPayload: signed).json["duplicate"] as? Bool == true)
                #expect(await receiver.receivedAtLeast(1))
                // Once the only delivery stored for the endpoint is delivered, nothing else can
                // come: the duplicate stored no second one.
                let endpointId = try #require((created.json["endpoint"] as? [String: Any])?["id"] as? String)
                #expect(
                    try await stack.whenSettled {
                        try await stack.store.deliveries(endpointId: endpointId, state: nil, before: nil, limit: 10).map(\.state) == [.delivered]
                    })
                let received = receiver.received
                #expect(received.count == 1, "forwarded once, though delivered twice by Apple")
                #expect(String(decoding: received.first?.body ?? Data(), as: UTF8.self) == #"{"signedPayload":"\#(signed)"}"#)
                #expect(received.allSatisfy { $0.json["type"] == nil }, "notifications only, no events")
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    @Test("a billing failure with a grace period keeps access until the grace ends; the recovery renews; renewal info is applied")
    func graceAndRecovery() async throws {
        try await withStack { stack in
            let api = stack.api
            let now = Date()
            // A subscription whose paid period has just ended, bought with StoreKit 2.
            let paid = transaction(id: "sub-1", original: "sub-1", purchased: now.addingTimeInterval(-400), expires: now.addingTimeInterval(-100))
            let bought = try await api.postSignedTransaction(
                appUserId: "carol", signedTransaction: try stack.simulatorPKI.signJWS(payload: try json(paid)), wait: TestWait.seconds)
            #expect(bought.status == 200)
            #expect(try await api.subscriber("carol").subscriptions.first?.status == .expired)

            let retry: [String: Any] = [
                "originalTransactionId": "sub-1", "productId": "com.example.pro.monthly", "autoRenewProductId": "com.example.pro.monthly",
                "autoRenewStatus": 1, "isInBillingRetryPeriod": true, "expirationIntent": 2,
                "gracePeriodExpiresDate": ms(now.addingTimeInterval(600)), "signedDate": ms(now), "environment": "Production",
            ]
            let failed = try await api.postNotification(
                signedPayload: try notification(
                    stack, type: "DID_FAIL_TO_RENEW", subtype: "GRACE_PERIOD", signedAt: now, transaction: paid, renewal: retry))
            _ = try await api.waitForFinal(try #require(failed.json["verificationId"] as? String))
            let inGrace = try #require(try await api.subscriber("carol").subscriptions.first)
            #expect(inGrace.status == .inGracePeriod && inGrace.isActive, "\(inGrace)")

            // Apple finally charges: a new period, billing retry over.
            var recovered = retry
            recovered["isInBillingRetryPeriod"] = false
            recovered.removeValue(forKey: "gracePeriodExpiresDate")
            recovered.removeValue(forKey: "expirationIntent")
            let renewal = transaction(id: "sub-2", original: "sub-1", purchased: now, expires: now.addingTimeInterval(300))
            let renewed = try await api.postNotification(
                signedPayload: try notification(
                    stack, type: "DID_RENEW", subtype: "BILLING_RECOVERY", signedAt: now.addingTimeInterval(1), transaction: renewal,
                    renewal: recovered))
            _ = try await api.waitForFinal(try #require(renewed.json["verificationId"] as? String))
            let active = try #require(try await api.subscriber("carol").subscriptions.first)
            #expect(active.status == .active && active.gracePeriodExpiresDate == nil && active.autoRenewEnabled == true, "\(active)")
        }
    }

    @Test("a notification whose transaction is of another environment than it claims grants nothing (stored, outcome jws_wrong_environment)")
    func environmentMismatch() async throws {
        try await withStack { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await api.postSignedTransaction(appUserId: "dana", signedTransaction: bought.signedTransaction, wait: TestWait.seconds).status
                    == 200)
            let now = Date()
            var sandboxRenewal = transaction(
                id: "90000001", original: bought.originalTransactionId, purchased: now, expires: now.addingTimeInterval(3_600))
            sandboxRenewal["environment"] = "Sandbox"
            let mixed = try await api.postNotification(
                signedPayload: try notification(stack, type: "DID_RENEW", signedAt: now, transaction: sandboxRenewal))
            #expect(mixed.status == 200 && mixed.json["outcome"] as? String == "jws_wrong_environment", "\(mixed.text)")
            #expect(try await api.subscriber("dana").history.map(\.transactionId) == [bought.transactionId])
            // The same renewal in a sandbox notification is consistent and granted.
            let consistent = try await api.postNotification(
                signedPayload: try notification(stack, type: "DID_RENEW", signedAt: now, transaction: sandboxRenewal, environment: "Sandbox"))
            #expect(consistent.status == 200 && consistent.json["outcome"] as? String == "submitted", "\(consistent.text)")
        }
    }

    @Test("with the app's Apple id configured, a production notification must name it (Apple's rule), a sandbox one need not; the simulator's pass")
    func appAppleId() async throws {
        try await withStack(configure: { $0.apps[0].appAppleId = 6_450_000_001 }) { stack in
            let now = Date()
            func post(_ appAppleId: Int64?, environment: String = "Production") async throws -> HTTPJSONClient.Reply {
                try await stack.api.postNotification(
                    signedPayload: try notification(
                        stack, type: "TEST", signedAt: now, transaction: nil, appAppleId: .some(appAppleId), environment: environment))
            }
            #expect(try await post(6_450_000_001).status == 200)
            let wrong = try await post(6_450_000_002)
            #expect(
                wrong.status == 403 && wrong.errorCode == "notification_rejected" && wrong.text.contains("jws_wrong_app_apple_id"), "\(wrong.text)")
            let none = try await post(nil)
            #expect(none.status == 403 && none.text.contains("jws_wrong_app_apple_id"), "\(none.text)")
            #expect(try await post(nil, environment: "Sandbox").status == 200)
            // The simulator learns the id from the same configuration: its production
            // notifications name it, and the server takes them.
            try await stack.sendNotifications()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let delivered = try await stack.whenSettled {
                try await stack.simulator.notifications().contains {
                    $0["transactionId"] as? String == bought.transactionId && $0["delivered"] as? Bool == true
                }
            }
            let sent = try await stack.simulator.notifications()
            #expect(delivered, "\(sent)")
        }
    }

    @Test("forged, unreadable, unknown-app, unowned and transaction-less notifications")
    func refusals() async throws {
        try await withStack { stack in
            let api = stack.api
            let now = Date()
            let good = try notification(
                stack, type: "DID_RENEW", signedAt: now,
                transaction: transaction(id: "x-1", original: "nobody-owns-this", purchased: now, expires: now.addingTimeInterval(60)))
            let unowned = try await api.postNotification(signedPayload: good)
            #expect(unowned.status == 200 && unowned.json["outcome"] as? String == "unowned" && unowned.json["verificationId"] == nil)

            var parts = good.split(separator: ".").map(String.init)
            var signature = Array(parts[2])
            signature[7] = signature[7] == "A" ? "B" : "A"
            parts[2] = String(signature)
            let forged = try await api.postNotification(signedPayload: parts.joined(separator: "."))
            #expect(forged.status == 403 && forged.errorCode == "notification_rejected" && forged.text.contains("jws_signature_invalid"))
            let stranger = try SimulatorPKI().signJWS(
                payload: try json(["notificationType": "TEST", "notificationUUID": "u", "data": ["bundleId": demoBundle]]))
            #expect(try await api.postNotification(signedPayload: stranger).status == 403)
            #expect(try await api.postNotification(signedPayload: "nonsense").errorCode == "invalid_notification")
            let otherApp = try notification(stack, type: "TEST", signedAt: now, transaction: nil, bundleId: "com.example.unknown")
            #expect(try await api.postNotification(signedPayload: otherApp).errorCode == "unknown_app")
            let test = try await api.postNotification(signedPayload: try notification(stack, type: "TEST", signedAt: now, transaction: nil))
            #expect(test.status == 200 && test.json["outcome"] as? String == "test")
            let bare = try await api.postNotification(signedPayload: try notification(stack, type: "DID_RENEW", signedAt: now, transaction: nil))
            #expect(bare.status == 200 && bare.json["outcome"] as? String == "no_transaction")
        }
    }
}
