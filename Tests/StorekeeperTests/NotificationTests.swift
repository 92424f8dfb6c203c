import AppStoreSimulator
import Foundation
import JobQueue
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// App Store Server Notifications V2 over HTTP, signed by the simulator's chain as Apple signs them.
@Suite("App Store Server Notifications V2")
struct NotificationTests {
    func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    func json(_ object: [String: Any]) throws -> [UInt8] { Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) }

    /// A signed V2 notification of `type` carrying `transaction` (a signed transaction payload).
    func notification(
        _ stack: LocalStack, type: String, uuid: String = UUID().uuidString.lowercased(), signedAt: Date,
        transaction: [String: Any]?, bundleId: String = demoBundle
    ) throws -> String {
        var data: [String: Any] = ["bundleId": bundleId, "environment": "Production", "bundleVersion": "1"]
        if let transaction { data["signedTransactionInfo"] = try stack.simulatorPKI.signJWS(payload: try json(transaction)) }
        return try stack.simulatorPKI.signJWS(
            payload: try json([
                "notificationType": type, "notificationUUID": uuid, "version": "2.0", "signedDate": ms(signedAt), "data": data,
            ]))
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
            #expect(try await api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction).status == 200)
            let original = bought.originalTransactionId
            let now = Date()
            let renewal = transaction(id: "renewal-1", original: original, purchased: now, expires: now.addingTimeInterval(600))
            let didRenew = try notification(stack, type: "DID_RENEW", signedAt: now, transaction: renewal)

            let first = try await api.postNotification(signedPayload: didRenew)
            #expect(first.status == 200 && first.json["outcome"] as? String == "submitted", "\(first.text)")
            let verified = try await api.waitForFinal(try #require(first.json["verificationId"] as? String), timeout: 20)
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
            let refundResult = try await api.waitForFinal(try #require(refund.json["verificationId"] as? String), timeout: 20)
            #expect((refundResult["grant"] as? [String: Any])?["revoked"] as? [String] == ["renewal-1"], "\(refundResult)")

            // The DID_RENEW arrives once more, late, under another UUID: the refund stands.
            let late = try await api.postNotification(
                signedPayload: try notification(stack, type: "DID_RENEW", signedAt: now.addingTimeInterval(1), transaction: renewal))
            #expect(late.status == 200 && late.json["duplicate"] as? Bool == false)
            if let id = late.json["verificationId"] as? String { _ = try await api.waitForFinal(id, timeout: 20) }
            let renewed = try await stack.store.transactions(appId: "demo", appUserId: "alice").first { $0.transactionId == "renewal-1" }
            #expect(renewed?.cancellationDate != nil, "a late renewal does not undo the refund")
            let ledger = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture))
            #expect(ledger.filter { $0.event == .purchase }.count == 2 && ledger.filter { $0.event == .refund }.count == 1)
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
            #expect(test.status == 200 && test.json["outcome"] as? String == "no_transaction")
        }
    }
}
