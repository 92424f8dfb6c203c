import AppStoreSimulator
import Crypto
import Foundation
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Apple's Retention Messaging against the real endpoint: the simulator signs each request as
/// the App Store does, posts it to the app's realtime URL and judges the answer as Apple would.
@Suite("retention messaging: the realtime endpoint")
struct RetentionTests {
    static let defaultMessage = "7f1f5a37-9a53-4e0b-8f5d-000000000001"
    static let retryMessage = "7f1f5a37-9a53-4e0b-8f5d-000000000002"
    static let offerMessage = "7f1f5a37-9a53-4e0b-8f5d-000000000003"
    static let switchMessage = "7f1f5a37-9a53-4e0b-8f5d-000000000004"

    static func withRetention<T>(_ body: (LocalStack) async throws -> T) async throws -> T {
        try await withStack(
            configure: {
                $0.apps[0].serverAPI = .generated()
                $0.apps[0].products.append(
                    Product(productId: "com.example.pro.annual", type: .autoRenewable, duration: "P1Y", priceMicros: 39_990_000, currency: "USD"))
                $0.apps[0].offers = [.init(id: "pro_comeback", productId: "com.example.pro.monthly")]
                $0.apps[0].retentionMessages = [
                    RetentionChoice(messageId: Self.retryMessage, billingRetry: true),
                    RetentionChoice(messageId: Self.switchMessage, locales: ["fr"], switchToProductId: "com.example.pro.annual"),
                    RetentionChoice(messageId: Self.offerMessage, products: ["com.example.pro.monthly"], minimumRenewals: 1, offerId: "pro_comeback"),
                    RetentionChoice(messageId: Self.defaultMessage),
                ]
            },
            { stack in
                try await stack.sendNotifications()
                try await stack.sendRetentionRequests()
                return try await body(stack)
            })
    }

    @Test("answers by the app's choices: the default message, a switch of plan by locale, an offer after a renewal, taken on the next one")
    func answers() async throws {
        try await Self.withRetention { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)

            let first = try await stack.simulator.askRetention(originalTransactionId: bought.originalTransactionId)
            #expect(first["status"] as? Int == 200 && first["kind"] as? String == "message", "\(first)")
            #expect((first["problems"] as? [String])?.isEmpty == true, "\(first)")
            #expect(((first["answer"] as? [String: Any])?["message"] as? [String: Any])?["messageIdentifier"] as? String == Self.defaultMessage)

            let french = try await stack.simulator.askRetention(originalTransactionId: bought.originalTransactionId, locale: "fr_CA")
            let alternate = (french["answer"] as? [String: Any])?["alternateProduct"] as? [String: Any]
            #expect(french["kind"] as? String == "alternateProduct" && (french["problems"] as? [String])?.isEmpty == true, "\(french)")
            #expect(
                alternate?["productId"] as? String == "com.example.pro.annual" && alternate?["messageIdentifier"] as? String == Self.switchMessage)

            // A month later it has renewed once: the offer, signed for this request, is taken.
            try await stack.simulator.advanceClock(seconds: 301)
            #expect(
                try await stack.whenSettled {
                    try await stack.api.subscriber("alice").history.filter { $0.productId == "com.example.pro.monthly" }.count == 2
                }, "the renewal is stored")
            let offered = try await stack.simulator.askRetention(originalTransactionId: bought.originalTransactionId)
            #expect(offered["kind"] as? String == "promotionalOffer" && (offered["problems"] as? [String])?.isEmpty == true, "\(offered)")
            #expect(offered["offerAppliedToNextRenewal"] as? String == "pro_comeback", "the simulator verified the V2 signature")
            try await stack.simulator.advanceClock(seconds: 301)
            let renewals = try await stack.simulator.soldTransactions().compactMap { $0["transaction"] as? [String: Any] }
                .filter { $0["original_transaction_id"] as? String == bought.originalTransactionId }
            #expect(renewals.count == 3 && renewals.contains { $0["promotional_offer_id"] as? String == "pro_comeback" }, "\(renewals)")

            // Replayed later, the same signed request is refused as stale.
            let replay = try await post(stack, #"{"signedPayload":"\#(offered["signedPayload"] as? String ?? "")"}"#)
            #expect(replay.status == 403 && replay.errorCode == "retention_request_rejected" && replay.text.contains("jws_stale"), "\(replay.text)")
        }
    }

    @Test("cancelling: Apple asks first; with the offer the subscriber stays and renews with it, without it they cancel")
    func cancelling() async throws {
        try await Self.withRetention { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let fresh = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "carol", signedTransaction: fresh.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let gone = try await stack.simulator.http.send(.POST, "/sim/subscriptions/\(fresh.originalTransactionId)/cancel-auto-renew")
            #expect(gone.json["status"] as? String == "auto_renew_off", "\(gone.text)")
            #expect((gone.json["retention"] as? [String: Any])?["kind"] as? String == "message", "the default message, then the cancel")
            #expect(
                try await stack.whenSettled { try await stack.api.subscriber("carol").subscriptions.first?.autoRenewEnabled == false },
                "the cancel reaches the server")

            let other = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let loyal = try await stack.simulator.purchase(device: other, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "dave", signedTransaction: loyal.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            try await stack.simulator.advanceClock(seconds: 301)
            #expect(
                try await stack.whenSettled {
                    try await stack.api.subscriber("dave").history.filter { $0.productId == "com.example.pro.monthly" }.count == 2
                })
            let kept = try await stack.simulator.http.send(.POST, "/sim/subscriptions/\(loyal.originalTransactionId)/cancel-auto-renew")
            #expect(kept.json["status"] as? String == "kept_with_offer", "\(kept.text)")
            try await stack.simulator.advanceClock(seconds: 301)
            #expect(
                try await stack.whenSettled {
                    try await stack.api.subscriber("dave").history.contains {
                        $0.productId == "com.example.pro.monthly" && $0.offer?.identifier == "pro_comeback"
                    }
                }, "the next renewal, stored with the offer")
            #expect(try await stack.api.subscriber("dave").subscriptions.first?.autoRenewEnabled == true)
        }
    }

    @Test("in billing retry: the choice for it comes first")
    func billingRetry() async throws {
        try await Self.withRetention { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "bob", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            try await stack.simulator.failBilling(originalTransactionId: bought.originalTransactionId, gracePeriod: false)
            try await stack.simulator.advanceClock(seconds: 301)
            #expect(
                try await stack.whenSettled {
                    try await stack.api.subscriber("bob").subscriptions.first?.status == .inBillingRetry
                }, "billing retry is stored")
            let asked = try await stack.simulator.askRetention(originalTransactionId: bought.originalTransactionId)
            #expect(
                ((asked["answer"] as? [String: Any])?["message"] as? [String: Any])?["messageIdentifier"] as? String == Self.retryMessage, "\(asked)")
        }
    }

    func post(_ stack: LocalStack, _ body: String, app: String = "demo") async throws -> HTTPJSONClient.Reply {
        try await stack.api.http.send(.POST, "/v1/retention/\(app)", body: Data(body.utf8))
    }

    @Test("refused: a request not signed by the App Store, one without its chain, bad bodies, an unknown app; nothing in them is answered")
    func refusals() async throws {
        try await Self.withRetention { stack in
            // Signed with a key of our own, with no certificate chain: what a forger can make.
            let key = P256.Signing.PrivateKey()
            let now = Int64(stack.clock.now().timeIntervalSince1970 * 1000)
            let claims =
                #"{"originalTransactionId":"1","appAppleId":\#(DemoConfiguration.appAppleId),"productId":"com.example.pro.monthly","userLocale":"en_US","requestIdentifier":"\#(UUID().uuidString)","signedDate":\#(now),"environment":"Production"}"#
            let header = Data(#"{"alg":"ES256"}"#.utf8).base64URL
            let input = "\(header).\(Data(claims.utf8).base64URL)"
            let signature = try key.signature(for: Data(input.utf8)).rawRepresentation.base64URL
            let forged = try await post(stack, #"{"signedPayload":"\#(input).\#(signature)"}"#)
            #expect(forged.status == 403 && forged.errorCode == "retention_request_rejected", "\(forged.text)")
            #expect(forged.text.contains("jws_missing_certificate_chain"), "\(forged.text)")
            let unsigned = try await post(stack, #"{"signedPayload":"\#(header).\#(Data(claims.utf8).base64URL)."}"#)
            #expect(unsigned.status == 403, "\(unsigned.text)")
            for bad in ["{}", #"{"signedPayload":""}"#, #"{"signedPayload":"abc"}"#, "[]", "{", #"{"signedPayload":7}"#] {
                let reply = try await post(stack, bad)
                #expect([400, 403].contains(reply.status), "\(bad): \(reply.text)")
            }
            #expect(try await post(stack, #"{"signedPayload":"a.b.c"}"#, app: "nope").status == 404)
        }
    }
}

extension RetentionTests {
    @Test(
        "Apple's other JWS are not realtime requests, a request is answered once, the sandbox names its app, and an offer goes only to its audience"
    )
    func forgeriesAndReplays() async throws {
        try await withStack(
            configure: {
                $0.apps[0].serverAPI = .generated()
                // Only for lapsed subscribers, whatever their renewals: a current one gets the message.
                $0.apps[0].offers = [.init(id: "win_them", productId: "com.example.pro.monthly", audience: .lapsed)]
                $0.apps[0].retentionMessages = [
                    RetentionChoice(messageId: Self.offerMessage, offerId: "win_them"), RetentionChoice(messageId: Self.defaultMessage),
                ]
            },
            { stack in
                try await stack.sendNotifications()
                try await stack.sendRetentionRequests()
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
                #expect(
                    try await stack.api.postSignedTransaction(appUserId: "erin", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                        .status == 200)

                // A purchase's own signed transaction is signed by Apple, but it is not a realtime
                // request: refused every time, and no offer is signed for it.
                for _ in 0..<5 {
                    let forged = try await post(stack, #"{"signedPayload":"\#(bought.signedTransaction)"}"#)
                    #expect(forged.status == 403 && forged.text.contains("jws_not_a_realtime_request"), "\(forged.text)")
                    #expect(!forged.text.contains("promotionalOffer"))
                }

                // Apple's real request: the current subscriber is not in the offer's audience.
                let asked = try await stack.simulator.askRetention(originalTransactionId: bought.originalTransactionId)
                #expect(asked["status"] as? Int == 200 && asked["kind"] as? String == "message", "\(asked)")
                #expect(((asked["answer"] as? [String: Any])?["message"] as? [String: Any])?["messageIdentifier"] as? String == Self.defaultMessage)
                // The same request posted again is a replay: refused, nothing signed.
                let signed = try #require(asked["signedPayload"] as? String)
                let replayed = try await post(stack, #"{"signedPayload":"\#(signed)"}"#)
                #expect(replayed.status == 403 && replayed.text.contains("jws_replayed"), "\(replayed.text)")

                // Lapsed, erin is the offer's audience: Apple's next request gets the signed offer.
                try await stack.simulator.cancelAutoRenew(originalTransactionId: bought.originalTransactionId)
                let expiry = try #require(try await stack.api.subscriber("erin").subscriptions.first?.expiresDate)
                try await stack.simulator.advanceClock(seconds: expiry.timeIntervalSince(stack.clock.now()) + 5)
                #expect(
                    try await stack.whenSettled { try await stack.api.subscriber("erin").activeEntitlements.isEmpty }, "the subscription lapsed")
                let lapsed = try await stack.simulator.askRetention(originalTransactionId: bought.originalTransactionId)
                #expect(lapsed["kind"] as? String == "promotionalOffer", "\(lapsed)")
            })
    }
}

extension Data {
    fileprivate var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(
            of: "=", with: "")
    }
}
