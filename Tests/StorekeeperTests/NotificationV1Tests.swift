import AppStoreModels
import Foundation
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// Legacy V1 notifications: plain JSON authenticated by the shared secret; their receipt is
/// verified like any other, never believed as sent.
@Suite("App Store Server Notifications V1 (legacy)")
struct NotificationV1Tests {
    func vector(_ name: String) throws -> Data { try TestPaths.fixture("notifications_v1/\(name).json") }

    @Test("the public V1 bodies parse with the values their sources assert")
    func vectors() throws {
        let renew = try JSONDecoder().decode(NotificationV1.self, from: try vector("aporat_did_renew"))
        #expect(renew.notificationType == "DID_RENEW" && renew.environment == .production && renew.autoRenewStatus == true)
        #expect(renew.bundleId == "my.app" && renew.bundleVersion == "1.0.0" && renew.password == "dummy_shared_secret")
        #expect(renew.originalTransactionId == "100000000000000" && renew.autoRenewProductId == "my.app.subscription.monthly")
        #expect(renew.latestReceipt != nil && renew.fields["deprecation"] != nil)

        let status = try JSONDecoder().decode(NotificationV1.self, from: try vector("imdhemy_did_change_renewal_status"))
        #expect(status.notificationType == "DID_CHANGE_RENEWAL_STATUS" && status.environment == .production)
        #expect(status.autoRenewStatus == false && status.bundleId == "com.some.thing" && status.originalTransactionId == "1000000723811158")

        let legacy = try JSONDecoder().decode(NotificationV1.self, from: try vector("appvise_initial_buy_legacy_fields"))
        #expect(legacy.notificationType == "INITIAL_BUY" && legacy.environment == .sandbox && legacy.autoRenewStatus == false)
        #expect(legacy.latestReceipt == "BASE64ENCODED_RECEIPT_INFO" && legacy.originalTransactionId == nil)
    }

    static let legacyApp = AppConfiguration(
        id: "legacy", bundleId: "my.app", sharedSecret: "dummy_shared_secret", apiKey: "legacy-app-key-0123456789")

    @Test("accepted with the app's shared secret, stored once; a wrong secret, an unknown app or an unknown shape are refused")
    func authentication() async throws {
        try await withStack(configure: { $0.apps.append(Self.legacyApp) }) { stack in
            let http = HTTPJSONClient(httpClient: stack.httpClient, baseURL: try #require(stack.serverURL))
            let body = try vector("aporat_did_renew")
            let first = try await http.send(.POST, "/v1/notifications/appstore", body: body)
            #expect(
                first.status == 200 && first.json["outcome"] as? String == "unowned" && first.json["duplicate"] as? Bool == false, "\(first.text)")
            #expect(first.json["notificationType"] as? String == "DID_RENEW")
            let again = try await http.send(.POST, "/v1/notifications/appstore", body: body)
            #expect(
                again.json["duplicate"] as? Bool == true && again.json["notificationUUID"] as? String == first.json["notificationUUID"] as? String)

            var object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            object["password"] = "guess"
            let wrong = try await http.send(.POST, "/v1/notifications/appstore", body: try JSONSerialization.data(withJSONObject: object))
            #expect(wrong.status == 403 && wrong.errorCode == "notification_rejected")

            let unknown = try await http.send(.POST, "/v1/notifications/appstore", body: try vector("imdhemy_did_change_renewal_status"))
            #expect(unknown.status == 422 && unknown.errorCode == "unknown_app")
            let neither = try await http.send(.POST, "/v1/notifications/appstore", body: Data(#"{"hello":"world"}"#.utf8))
            #expect(neither.status == 400 && neither.errorCode == "invalid_notification")
        }
    }

    @Test("a V1 REFUND's receipt is verified and revokes the subscription of the owner")
    func refundThroughV1() async throws {
        try await withStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let posted = try await stack.api.postReceipt(appUserId: "alice", receipt: bought.receipt, wait: TestWait.seconds)
            #expect(posted.json["state"] as? String == "verified")
            try await stack.simulator.refund(transactionId: bought.transactionId)
            let receipt = try await stack.simulator.receipt(device: device)

            let body: [String: Any] = [
                "notification_type": "REFUND", "password": DemoConfiguration.sharedSecret, "bid": demoBundle, "bvrs": "1",
                "environment": "PROD",
                "unified_receipt": [
                    "status": 0, "environment": "Production", "latest_receipt": receipt,
                    "latest_receipt_info": [["original_transaction_id": bought.originalTransactionId, "product_id": "com.example.pro.monthly"]],
                ],
            ]
            let http = HTTPJSONClient(httpClient: stack.httpClient, baseURL: try #require(stack.serverURL))
            let answer = try await http.send(.POST, "/v1/notifications/appstore", body: try JSONSerialization.data(withJSONObject: body))
            #expect(answer.status == 200 && answer.json["outcome"] as? String == "submitted", "\(answer.text)")
            let verification = try await stack.api.waitForFinal(try #require(answer.json["verificationId"] as? String))
            #expect((verification["grant"] as? [String: Any])?["revoked"] as? [String] == [bought.transactionId], "\(verification)")
            #expect(try await stack.api.subscriber("alice").subscriptions.first?.status == .revoked)
        }
    }
}
