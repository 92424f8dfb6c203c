import AppStoreClient
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

/// Offer signatures over real HTTP: for the user the caller proved, for offers the app set up,
/// by the user's history; checked here with swift-crypto from Apple's documented formats, not
/// with the code that signs.
@Suite("offers: promotional signatures and introductory eligibility")
struct OffersRouteTests {
    static let key = ServerAPIKeyConfiguration.generated(keyId: "OFFERKEY01")

    static func withOffers<T>(signaturesPerDay: Int = 20, _ body: (LocalStack) async throws -> T) async throws -> T {
        try await withStack(
            configure: {
                $0.offerSignaturesPerUserPerDay = signaturesPerDay
                $0.apps[0].serverAPI = .generated()
                $0.apps[0].offerSigning = Self.key
                $0.apps[0].offers = [
                    .init(id: "comeback", productId: "com.example.pro.monthly"),
                    .init(id: "loyal", productId: "com.example.pro.monthly", audience: .current),
                    .init(id: "winback", productId: "com.example.pro.monthly", kind: .winBack),
                ]
            }, body)
    }

    static var publicKey: P256.Signing.PublicKey {
        get throws { try P256.Signing.PrivateKey(pemRepresentation: key.privateKeyPEM).publicKey }
    }

    /// A compact JWS's header and payload, after checking its ES256 signature (RFC 7515, 7518).
    static func verifiedJWS(_ jws: String) throws -> (header: [String: Any], payload: [String: Any]) {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let raw = decodeBase64URL(parts[2]), let head = decodeBase64URL(parts[0]), let body = decodeBase64URL(parts[1]) else {
            throw JWSError()
        }
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: raw)
        #expect(try publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)), "ES256 signature")
        guard let header = try JSONSerialization.jsonObject(with: head) as? [String: Any],
            let payload = try JSONSerialization.jsonObject(with: body) as? [String: Any]
        else { throw JWSError() }
        return (header, payload)
    }

    struct JWSError: Error {}

    func post(_ stack: LocalStack, _ path: String, _ body: String, as headers: [String: String]) async throws -> HTTPJSONClient.Reply {
        try await stack.api.http.send(.POST, path, headers: headers, body: Data(body.utf8))
    }

    @Test("offer signatures per user are capped for every process: three a day here, then 429 until one is back; another user is not affected")
    func signatureCap() async throws {
        try await Self.withOffers(signaturesPerDay: 3) { stack in
            stack.clock.freeze()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let offer = #"{"productId":"com.example.pro.monthly","offerId":"comeback"}"#
            let other = try await stack.startAnotherServer(configuration: stack.configuration)
            let secondProcess = HTTPJSONClient(httpClient: stack.httpClient, baseURL: other.url)
            var statuses: [Int] = []
            for index in 0..<4 {
                let server = index.isMultiple(of: 2) ? stack.api.http : secondProcess
                statuses.append(
                    try await server.send(
                        .POST, "/v1/subscribers/alice/offers/promotional", headers: try DemoCallers.client(as: "alice"), body: Data(offer.utf8)
                    ).status)
            }
            #expect(statuses == [200, 200, 200, 429], "\(statuses)")
            let refused = try await post(stack, "/v1/subscribers/alice/offers/promotional", offer, as: try DemoCallers.client(as: "alice"))
            #expect(refused.errorCode == "rate_limited" && refused.headers["retry-after"] == "28800", "\(refused.headers) \(refused.text)")
            // The backend asks for the same user: the same cap.
            #expect(try await post(stack, "/v1/subscribers/alice/offers/promotional", offer, as: DemoCallers.backend).status == 429)
            stack.clock.advance(by: 28_800)
            // A user token valid at the server's (moved) clock.
            let later = Int(stack.clock.now().timeIntervalSince1970)
            let token = try UserTokens.hs256(["sub": "alice", "exp": later + 300], secret: DemoConfiguration.userTokenSecret)
            let alice = ["Authorization": "Bearer \(DemoConfiguration.clientKey)", "Storekeeper-User-Token": token]
            let again = try await post(stack, "/v1/subscribers/alice/offers/promotional", offer, as: alice)
            #expect(again.status == 200, "one signature is back after a third of a day: \(again.text)")
            #expect(try await post(stack, "/v1/subscribers/alice/offers/promotional", offer, as: alice).status == 429)
            try await other.stop()
        }
    }

    @Test("a subscriber's promotional offer: the V1 signature over Apple's payload and the V2 JWS verify with the key; each claim as documented")
    func promotional() async throws {
        try await Self.withOffers { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let before = Int64(Date().timeIntervalSince1970 * 1000) - 1
            let reply = try await post(
                stack, "/v1/subscribers/alice/offers/promotional", #"{"productId":"com.example.pro.monthly","offerId":"comeback"}"#,
                as: try DemoCallers.client(as: "alice"))
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json["reason"] as? String == "current_subscriber")
            let token = AppAccountToken.derive(appUserId: "alice")
            #expect(reply.json["appAccountToken"] as? String == token)
            let v1 = try #require(reply.json["v1"] as? [String: Any])
            let nonce = try #require(v1["nonce"] as? String)
            let timestamp = try #require((v1["timestamp"] as? NSNumber)?.int64Value)
            #expect(v1["keyIdentifier"] as? String == "OFFERKEY01" && nonce == nonce.lowercased() && UUID(uuidString: nonce) != nil)
            #expect(timestamp >= before && timestamp <= Int64(Date().timeIntervalSince1970 * 1000) + 1)
            let signed = [demoBundle, "OFFERKEY01", "com.example.pro.monthly", "comeback", token, nonce, String(timestamp)]
                .joined(separator: "\u{2063}")
            let signature = try #require(v1["signature"] as? String)
            let der = try #require(Data(base64Encoded: signature))
            #expect(try Self.publicKey.isValidSignature(try P256.Signing.ECDSASignature(derRepresentation: der), for: Data(signed.utf8)))

            let (header, claims) = try Self.verifiedJWS(try #require(reply.json["jws"] as? String))
            #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "OFFERKEY01")
            #expect(claims["aud"] as? String == "promotional-offer" && claims["bid"] as? String == demoBundle)
            #expect(claims["iss"] as? String == Self.key.issuerId && claims["productId"] as? String == "com.example.pro.monthly")
            #expect(claims["offerIdentifier"] as? String == "comeback" && claims["transactionId"] as? String == bought.transactionId)
            #expect(claims["iat"] is NSNumber && UUID(uuidString: claims["nonce"] as? String ?? "") != nil)

            // The backend may ask for any user; a subscriber now qualifies for "current only".
            let backend = try await post(
                stack, "/v1/subscribers/alice/offers/promotional", #"{"productId":"com.example.pro.monthly","offerId":"loyal"}"#,
                as: DemoCallers.backend)
            #expect(backend.status == 200 && backend.json["offerId"] as? String == "loyal", "\(backend.text)")
        }
    }

    @Test("refused: another user's offer, no user token, a user who never subscribed, an offer not configured, a win-back offer, bad bodies")
    func refusals() async throws {
        try await Self.withOffers { stack in
            let path = "/v1/subscribers/alice/offers/promotional"
            let body = #"{"productId":"com.example.pro.monthly","offerId":"comeback"}"#
            let other = try await post(stack, path, body, as: try DemoCallers.client(as: "mallory"))
            #expect(other.status == 403 && other.errorCode == "other_user", "\(other.text)")
            let anonymous = try await post(stack, path, body, as: DemoCallers.anonymous)
            #expect(anonymous.status == 401 && anonymous.errorCode == "user_token_required", "\(anonymous.text)")
            let never = try await post(stack, path, body, as: try DemoCallers.client(as: "alice"))
            #expect(never.status == 403 && never.errorCode == "offer_not_eligible" && never.text.contains("never_subscribed"), "\(never.text)")
            let unknown = try await post(stack, path, #"{"productId":"com.example.pro.monthly","offerId":"made-up"}"#, as: DemoCallers.backend)
            #expect(unknown.status == 404 && unknown.errorCode == "not_found")
            let misplaced = try await post(stack, path, #"{"productId":"com.example.coins100","offerId":"comeback"}"#, as: DemoCallers.backend)
            #expect(misplaced.status == 404, "an offer of another product is not this one")
            let winBack = try await post(stack, path, #"{"productId":"com.example.pro.monthly","offerId":"winback"}"#, as: DemoCallers.backend)
            #expect(winBack.status == 403 && winBack.text.contains("win_back_offer"))
            for bad in [#"{"productId":"com.example.pro.monthly"}"#, #"{"productId":"x","offerId":"y","price":0}"#, "[]", "{"] {
                let reply = try await post(stack, path, bad, as: DemoCallers.backend)
                #expect(reply.status == 400, "\(bad): \(reply.text)")
            }
            let unsigned = try await withStack(configure: { $0.apps[0].offers = [.init(id: "comeback", productId: "com.example.pro.monthly")] }) {
                try await post($0, path, body, as: DemoCallers.backend)
            }
            #expect(unsigned.status == 409 && unsigned.errorCode == "offer_signing_not_configured", "\(unsigned.text)")
        }
    }

    @Test("win-back: none while subscribed; once lapsed, the offers Apple names in the renewal info, for that user only")
    func winBack() async throws {
        try await Self.withOffers { stack in
            try await stack.sendNotifications()
            let path = "/v1/subscribers/alice/offers/win-back"
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let subscribed = try await stack.api.http.send(.GET, path, headers: try aliceNow(stack))
            #expect(subscribed.status == 200 && (subscribed.json["offers"] as? [Any])?.isEmpty == true, "\(subscribed.text)")

            _ = try await stack.simulator.http.send(.POST, "/sim/subscriptions/\(bought.originalTransactionId)/cancel-auto-renew")
            try await stack.simulator.advanceClock(seconds: 301)
            // The EXPIRED notification's renewal info names the offer; the server keeps it.
            #expect(
                try await stack.whenSettled {
                    try await stack.api.http.send(.GET, path, headers: DemoCallers.backend).json["offers"].map { ($0 as? [Any])?.isEmpty == false }
                        ?? false
                }, "the lapse reaches the server")
            let lapsed = try await stack.api.http.send(.GET, path, headers: try aliceNow(stack))
            let offers = (lapsed.json["offers"] as? [[String: Any]]) ?? []
            #expect(offers.count == 1, "\(lapsed.text)")
            #expect(offers.first?["offerId"] as? String == "winback" && offers.first?["productId"] as? String == "com.example.pro.monthly")
            #expect(offers.first?["originalTransactionId"] as? String == bought.originalTransactionId && offers.first?["configured"] as? Bool == true)

            let token = try UserTokens.hs256(user: "mallory", secret: DemoConfiguration.userTokenSecret, now: stack.clock.now())
            let other = try await stack.api.http.send(
                .GET, path, headers: ["Authorization": "Bearer \(DemoConfiguration.clientKey)", "Storekeeper-User-Token": token])
            #expect(other.status == 403 && other.errorCode == "other_user", "\(other.text)")
            let anonymous = try await stack.api.http.send(.GET, path, headers: DemoCallers.anonymous)
            #expect(anonymous.status == 401 && anonymous.errorCode == "user_token_required", "\(anonymous.text)")
            let stranger = try await stack.api.http.send(.GET, "/v1/subscribers/nobody/offers/win-back", headers: DemoCallers.backend)
            #expect(stranger.status == 200 && (stranger.json["offers"] as? [Any])?.isEmpty == true, "\(stranger.text)")
        }
    }

    @Test("introductory eligibility: new to the group, eligible; a subscriber of the group, not, in a JWS naming their transaction")
    func introductory() async throws {
        try await Self.withOffers { stack in
            let path = "/v1/subscribers/alice/offers/introductory"
            let body = #"{"productId":"com.example.pro.monthly"}"#
            let fresh = try await post(stack, path, body, as: try DemoCallers.client(as: "alice"))
            #expect(fresh.status == 200 && fresh.json["eligible"] as? Bool == true && fresh.json["reason"] as? String == "new_to_group")
            #expect(fresh.json["jws"] == nil, "no transaction of the user is known to name: \(fresh.text)")

            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: coins.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let stillNew = try await post(stack, path, body, as: try DemoCallers.client(as: "alice"))
            let (_, allowed) = try Self.verifiedJWS(try #require(stillNew.json["jws"] as? String, "\(stillNew.text)"))
            #expect(allowed["aud"] as? String == "introductory-offer-eligibility" && allowed["allowIntroductoryOffer"] as? Bool == true)
            #expect(allowed["transactionId"] as? String == coins.transactionId && allowed["productId"] as? String == "com.example.pro.monthly")

            let monthly = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: monthly.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let subscribed = try await post(stack, path, body, as: try DemoCallers.client(as: "alice"))
            #expect(subscribed.json["eligible"] as? Bool == false && subscribed.json["reason"] as? String == "subscribed_in_group")
            let (_, refused) = try Self.verifiedJWS(try #require(subscribed.json["jws"] as? String))
            #expect(refused["allowIntroductoryOffer"] as? Bool == false && refused["transactionId"] as? String == monthly.transactionId)

            for product in ["com.example.coins100", "com.example.nothing"] {
                let reply = try await post(stack, path, #"{"productId":"\#(product)"}"#, as: DemoCallers.backend)
                #expect(reply.status == 404, "\(product): \(reply.text)")
            }
            let other = try await post(stack, path, body, as: try DemoCallers.client(as: "mallory"))
            #expect(other.status == 403 && other.errorCode == "other_user")
        }
    }

    @Test(
        "introductory eligibility is per Apple account: a second app account that bought only coins on the Apple account of a subscriber is not eligible; another Apple account is"
    )
    func introductoryPerAppleAccount() async throws {
        try await Self.withOffers { stack in
            let body = #"{"productId":"com.example.pro.monthly"}"#
            func ask(_ user: String) async throws -> HTTPJSONClient.Reply {
                try await self.post(stack, "/v1/subscribers/\(user)/offers/introductory", body, as: try DemoCallers.client(as: user))
            }
            func record(_ user: String, _ purchase: SimulatorClient.Purchase) async throws {
                let reply = try await stack.api.postSignedTransaction(
                    appUserId: user, signedTransaction: purchase.signedTransaction, wait: TestWait.seconds)
                #expect(reply.status == 200, "\(reply.text)")
            }
            let account = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            try await record("alice", try await stack.simulator.purchase(device: account, productId: "com.example.pro.monthly"))
            // The same Apple account signed in to the app as another user, who buys only coins.
            let coins = try await stack.simulator.purchase(device: account, productId: "com.example.coins100")
            try await record("alice-2", coins)
            let second = try await ask("alice-2")
            #expect(second.status == 200 && second.json["eligible"] as? Bool == false, "\(second.text)")
            #expect(second.json["reason"] as? String == "subscribed_in_group")
            let (_, refused) = try Self.verifiedJWS(try #require(second.json["jws"] as? String, "\(second.text)"))
            #expect(refused["allowIntroductoryOffer"] as? Bool == false)
            #expect(refused["transactionId"] as? String == coins.transactionId, "the JWS names the asking user's own transaction")

            // Another Apple account's coins say nothing about alice's.
            let stranger = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            try await record("bob", try await stack.simulator.purchase(device: stranger, productId: "com.example.coins100"))
            let bob = try await ask("bob")
            #expect(bob.json["eligible"] as? Bool == true && bob.json["reason"] as? String == "new_to_group", "\(bob.text)")
        }
    }

    @Test("the simulator takes the server's eligibility JWS as StoreKit does: eligible, a free trial; not eligible, the full price; forged, refused")
    func introductoryApplied() async throws {
        try await Self.withOffers { stack in
            let path = "/v1/subscribers/alice/offers/introductory"
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: coins.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            func buyTrial(_ jws: String, on device: UUID) async throws -> HTTPJSONClient.Reply {
                try await stack.simulator.http.send(
                    .POST, "/sim/devices/\(device.uuidString)/purchases",
                    body: Data(
                        #"{"productId":"com.example.pro.monthly","offer":{"type":1,"discountType":"FREE_TRIAL","period":"P1W"},"introductoryOfferEligibility":"\#(jws)"}"#
                            .utf8))
            }
            let eligible = try #require(
                try await post(stack, path, #"{"productId":"com.example.pro.monthly"}"#, as: DemoCallers.backend).json["jws"] as? String)
            let trial = try await buyTrial(eligible, on: device)
            #expect(trial.status == 201, "\(trial.text)")
            let trialTransaction = try #require(trial.json["transaction"] as? [String: Any])
            #expect("\(trialTransaction["is_trial_period"] ?? "")" == "true", "\(trialTransaction)")
            let signed = try #require(trial.json["signedTransaction"] as? String)
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: signed, wait: TestWait.seconds).status == 200)

            // Subscribed in the group now: the server says no, and the store sells at the full price.
            let refused = try #require(
                try await post(stack, path, #"{"productId":"com.example.pro.monthly"}"#, as: DemoCallers.backend).json["jws"] as? String)
            // (Another device: the first holds the subscription already.)
            let second = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let full = try await buyTrial(refused, on: second)
            #expect(full.status == 201, "\(full.text)")
            #expect("\((full.json["transaction"] as? [String: Any])?["is_trial_period"] ?? "")" == "false", "\(full.text)")

            // Signed with a key that is not the app's: refused as StoreKit's purchase error.
            let forgedKey = ServerAPIKeyConfiguration.generated(keyId: "FORGED0001")
            let forger = try OfferSigner(
                credentials: .init(issuerId: forgedKey.issuerId, keyId: forgedKey.keyId, bundleId: demoBundle, privateKeyPEM: forgedKey.privateKeyPEM)
            )
            let forged = try await forger.introductoryEligibility(
                productId: "com.example.pro.monthly", allow: true, transactionId: coins.transactionId, now: stack.clock.now(), nonce: UUID())
            let third = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let refusal = try await buyTrial(forged, on: third)
            #expect(refusal.status == 400 && refusal.text.contains("invalidOfferSignature"), "\(refusal.text)")
        }
    }

    /// The app for alice, with a user token minted at the simulator's clock (which the test moves).
    func aliceNow(_ stack: LocalStack) throws -> [String: String] {
        let token = try UserTokens.hs256(user: "alice", secret: DemoConfiguration.userTokenSecret, now: stack.clock.now())
        return ["Authorization": "Bearer \(DemoConfiguration.clientKey)", "Storekeeper-User-Token": token]
    }

    /// A purchase on the simulator with `promotionalOffer` (the V1 fields or `jws`), as StoreKit sends it.
    func buy(
        _ stack: LocalStack, device: UUID, productId: String = "com.example.pro.monthly", token: String?, offer: [String: Any]
    ) async throws
        -> HTTPJSONClient.Reply
    {
        var body: [String: Any] = ["productId": productId, "promotionalOffer": offer]
        if let token { body["appAccountToken"] = token }
        return try await stack.simulator.http.send(
            .POST, "/sim/devices/\(device.uuidString)/purchases", body: try JSONSerialization.data(withJSONObject: body))
    }

    @Test(
        "the simulator sells a lapsed subscriber the offer with the server's V1 signature, then with the V2 JWS, at the offer's price; refuses a replayed, forged, stale, misdirected or incomplete one"
    )
    func simulatorAppliesOffers() async throws {
        try await withStack(configure: {
            $0.apps[0].serverAPI = .generated()
            $0.apps[0].products.append(
                Product(productId: "com.example.pro.annual", type: .autoRenewable, duration: "P1Y", priceMicros: 39_990_000, currency: "USD"))
            $0.apps[0].offers = [.init(id: "comeback", productId: "com.example.pro.monthly")]
        }) { stack in
            let token = AppAccountToken.derive(appUserId: "alice")
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let first = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly", appAccountToken: token)
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: first.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            _ = try await stack.simulator.http.send(.POST, "/sim/subscriptions/\(first.originalTransactionId)/cancel-auto-renew")
            try await stack.simulator.advanceClock(seconds: 2 * 86_400)

            let path = "/v1/subscribers/alice/offers/promotional"
            let body = #"{"productId":"com.example.pro.monthly","offerId":"comeback"}"#
            let signed = try await post(stack, path, body, as: try aliceNow(stack))
            #expect(signed.json["reason"] as? String == "lapsed_subscriber", "\(signed.text)")
            let v1 = try #require(signed.json["v1"] as? [String: Any])
            let fields: [String: Any] = [
                "offerId": "comeback", "keyId": v1["keyIdentifier"] ?? "", "nonce": v1["nonce"] ?? "", "timestamp": v1["timestamp"] ?? 0,
                "signature": v1["signature"] ?? "",
            ]
            // The same values under a token the signature does not cover, or for another product: refused.
            let otherToken = try await buy(stack, device: device, token: AppAccountToken.derive(appUserId: "mallory"), offer: fields)
            #expect(otherToken.status == 400 && otherToken.simulatorCode == "invalidOfferSignature", "\(otherToken.text)")
            let otherProduct = try await buy(stack, device: device, productId: "com.example.pro.annual", token: token, offer: fields)
            #expect(otherProduct.status == 400 && otherProduct.simulatorCode == "invalidOfferSignature", "\(otherProduct.text)")

            let bought = try await buy(stack, device: device, token: token, offer: fields)
            #expect(bought.status == 201, "\(bought.text)")
            let transaction = try jwsPayload(try #require(bought.json["signedTransaction"] as? String))
            #expect(transaction["offerType"] as? Int == 2 && transaction["offerIdentifier"] as? String == "comeback")
            #expect(transaction["price"] as? Int == 2_495 && transaction["offerDiscountType"] as? String == "PAY_AS_YOU_GO", "\(transaction)")
            let granted = try await stack.api.postSignedTransaction(
                appUserId: "alice", signedTransaction: try #require(bought.json["signedTransaction"] as? String), wait: TestWait.seconds)
            #expect(granted.status == 200, "\(granted.text)")
            let stored = try await stack.store.transactions(appId: "demo", appUserId: "alice").first { $0.offer?.identifier == "comeback" }
            #expect(stored?.offer?.type == 2 && stored?.price?.milliunits == 2_495, "charged the offer's price: \(String(describing: stored))")

            // The same signature again: its nonce is spent.
            let second = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let replayed = try await buy(stack, device: second, token: token, offer: fields)
            #expect(replayed.status == 400 && replayed.simulatorCode == "invalidOfferSignature" && replayed.text.contains("nonce"))
            // V2: the JWS alone.
            let fresh = try await post(stack, path, body, as: try aliceNow(stack))
            let jws = try #require(fresh.json["jws"] as? String)
            let viaJWS = try await buy(stack, device: second, token: token, offer: ["jws": jws])
            #expect(viaJWS.status == 201, "\(viaJWS.text)")
            #expect(try jwsPayload(try #require(viaJWS.json["signedTransaction"] as? String))["offerIdentifier"] as? String == "comeback")

            // Forged: the same fields signed with another key.
            let third = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let forger = P256.Signing.PrivateKey()
            var forged = fields
            let nonce = UUID().uuidString.lowercased()
            let now = Int64(stack.clock.now().timeIntervalSince1970 * 1000)
            let text = [demoBundle, "\(fields["keyId"] ?? "")", "com.example.pro.monthly", "comeback", token, nonce, String(now)]
                .joined(separator: "\u{2063}")
            forged["nonce"] = nonce
            forged["timestamp"] = now
            forged["signature"] = try forger.signature(for: Data(text.utf8)).derRepresentation.base64EncodedString()
            let forgery = try await buy(stack, device: third, token: token, offer: forged)
            #expect(forgery.status == 400 && forgery.simulatorCode == "invalidOfferSignature", "\(forgery.text)")
            // Incomplete; and a day and more after it was signed.
            let incomplete = try await buy(stack, device: third, token: token, offer: ["offerId": "comeback", "keyId": "\(fields["keyId"] ?? "")"])
            #expect(incomplete.status == 400 && incomplete.simulatorCode == "missingOfferParameters", "\(incomplete.text)")
            let late = try await post(stack, path, body, as: try aliceNow(stack))
            try await stack.simulator.advanceClock(seconds: 86_400 + 60)
            let stale = try await buy(stack, device: third, token: token, offer: ["jws": try #require(late.json["jws"] as? String)])
            #expect(stale.status == 400 && stale.simulatorCode == "invalidOfferSignature" && stale.text.contains("day"), "\(stale.text)")
        }
    }
}

extension HTTPJSONClient.Reply {
    /// The simulator's error code (`{"error": {"code": …}}`).
    fileprivate var simulatorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }
}
