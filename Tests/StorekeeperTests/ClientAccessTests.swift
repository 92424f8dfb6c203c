import AppStoreCrypto
import AppStoreSimulator
import Crypto
import Foundation
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// The app calling Storekeeper itself, with a publishable client key: what it may do for its
/// own user, and what it may not do, over real HTTP. User tokens are made here from RFC 7519
/// and RFC 7515 (HS256), not with the library the server verifies them with.
@Suite("client keys and user tokens")
struct ClientAccessTests {
    static let clientKey = "pk_test_0123456789abcdef"
    static let secret = "user-token-secret-of-the-apps-backend-0123"

    static func token(_ claims: [String: Any], secret: String = Self.secret) throws -> String {
        try UserTokens.hs256(claims, secret: secret)
    }

    func client(_ stack: LocalStack, token: String?) -> (HTTPJSONClient, [String: String]) {
        var headers = ["Authorization": "Bearer \(Self.clientKey)"]
        if let token { headers["Storekeeper-User-Token"] = token }
        return (stack.api.http, headers)
    }

    @Test("the appAccountToken derivation is the documented one")
    func derivation() {
        #expect(AppAccountToken.derive(appUserId: "alice") == "bf204d83-b02f-8018-ad2d-7e4d363f4b9f")
        #expect(AppAccountToken.derive(appUserId: "carol") == "27b5ea96-4228-850d-8974-2bcfcf0958b4")
    }

    @Test("with user tokens: the user's own calls pass; another user's, backend and admin routes, bad tokens and floods do not")
    func userTokens() async throws {
        try await withStack(configure: { configuration in
            configuration.apps[0].client = ClientAccess(
                key: Self.clientKey, userTokens: UserTokenPolicy(hs256Secret: Self.secret), userRatePerSecond: 0.001)
        }) { stack in
            let now = Int(stack.clock.now().timeIntervalSince1970)
            let alice = try Self.token(["sub": "alice", "iat": now, "exp": now + 300])
            let (http, headers) = client(stack, token: alice)

            #expect(try await http.send(.GET, "/v1/products", headers: headers).status == 200)
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let mine = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: headers,
                json: TransactionPost(appUserId: "alice", signedTransaction: bought.signedTransaction))
            #expect(mine.status == 200 && mine.json["state"] as? String == "verified", "\(mine.text)")
            let verificationId = try #require(mine.json["id"] as? String)

            // Everything else this user's token may not do.
            let other = try await http.send(
                .POST, "/v1/transactions", headers: headers, json: TransactionPost(appUserId: "bob", signedTransaction: bought.signedTransaction))
            #expect(other.status == 403 && other.errorCode == "other_user", "\(other.text)")
            let forBob = try await http.send(.GET, "/v1/subscribers/bob", headers: headers)
            #expect(forBob.status == 403 && forBob.errorCode == "other_user")
            let bobsOffering = try await http.send(.GET, "/v1/offerings?appUserId=bob", headers: headers)
            #expect(bobsOffering.status == 403 && bobsOffering.errorCode == "other_user", "\(bobsOffering.text)")
            #expect(try await http.send(.GET, "/v1/offerings", headers: headers).status == 200)
            for (method, path) in [
                (HTTPMethod.GET, "/v1/events"), (.GET, "/v1/subscribers/alice/events"), (.GET, "/v1/admin/apps/demo/ledger"),
                (.GET, "/v1/admin/apps/demo/webhooks"), (.GET, "/v1/admin/apps/demo/orders/MK5TTTVWJH"),
                (.GET, "/v1/admin/apps/demo/transactions/\(bought.transactionId)/refunds"),
                (.PUT, "/v1/admin/apps/demo/subscriptions/\(bought.originalTransactionId)/renewal-extension"),
                (.POST, "/v1/admin/apps/demo/products/com.example.pro.monthly/renewal-extension"),
                // What unlocks what, and access without a purchase, are the operator's alone.
                (.GET, "/v1/admin/apps/demo/entitlements"), (.PUT, "/v1/admin/apps/demo/entitlements/pro"),
                (.DELETE, "/v1/admin/apps/demo/entitlements/pro"), (.POST, "/v1/admin/apps/demo/subscribers/alice/promotional-grants"),
                (.GET, "/v1/admin/apps/demo/subscribers/alice/promotional-grants"), (.GET, "/v1/admin/apps/demo/offerings"),
                (.PUT, "/v1/admin/apps/demo/offerings/default"), (.DELETE, "/v1/admin/apps/demo/offerings/default"),
                (.PUT, "/v1/admin/apps/demo/offering-targeting"), (.GET, "/v1/admin/apps/demo/subscribers/alice/offering-override"),
                (.PUT, "/v1/admin/apps/demo/subscribers/alice/offering-override"),
                (.DELETE, "/v1/admin/apps/demo/subscribers/alice/offering-override"), (.DELETE, "/v1/admin/apps/demo/subscribers/alice"),
                (.PUT, "/v1/admin/apps/demo/subscribers/alice/suspension"), (.DELETE, "/v1/admin/apps/demo/subscribers/alice/suspension"),
                (.POST, "/v1/admin/apps/demo/imports"),
                (.POST, "/v1/admin/apps/demo/promotional-grants/00000000-0000-4000-8000-000000000000/revoke"),
                (.GET, "/v1/admin/apps/demo/audit"),
            ] {
                let reply = try await http.send(method, path, headers: headers)
                #expect(reply.status == 403 && reply.errorCode == "client_key_not_allowed", "\(path): \(reply.text)")
            }

            // Bad tokens.
            for (name, bad) in [
                ("none", nil), ("forged", try Self.token(["sub": "alice", "exp": now + 300], secret: "another-secret-of-32-bytes-or-more!!")),
                ("expired", try Self.token(["sub": "alice", "exp": now - 3_600])),
                ("too long-lived", try Self.token(["sub": "alice", "iat": now, "exp": now + 86_400])),
                ("garbage", "not.a.jwt"),
            ] {
                let (badHTTP, badHeaders) = client(stack, token: bad)
                let reply = try await badHTTP.send(.GET, "/v1/subscribers/alice", headers: badHeaders)
                #expect(
                    reply.status == 401 && reply.errorCode == (bad == nil ? "user_token_required" : "invalid_user_token"), "\(name): \(reply.text)")
            }

            // The user's budget (a bucket of ten, refilled at one call per 1,000 s) runs out:
            // 429 with Retry-After, whatever the route. The limiter reads the stack's clock,
            // frozen here: the count of calls decides, not how long a busy machine takes.
            stack.clock.freeze()
            var answers: [Int] = []
            var limited: HTTPJSONClient.Reply?
            for _ in 0..<20 where limited == nil {
                let reply = try await http.send(.GET, "/v1/verifications/\(verificationId)", headers: headers)
                answers.append(reply.status)
                if reply.status == 429 { limited = reply }
            }
            #expect(answers.dropLast().allSatisfy { $0 == 200 } && limited?.errorCode == "rate_limited", "\(answers)")
            #expect(Int(limited?.headers["retry-after"] ?? "") ?? 0 >= 1)
            // The backend's secret key is not limited, and still reads anyone.
            #expect(try await stack.api.subscriber("alice").activeEntitlements.contains("com.example.removeads"))
        }
    }

    /// The signed bytes, rebuilt from docs/CLIENTS.md: the request's body enters by its SHA-256.
    static func signedMessage(
        nonce: String, method: String = "GET", target: String, requestBody: Data = Data(), status: Int, timestamp: String, keyId: String,
        body: Data
    ) -> Data {
        let digest = sha256Hex(requestBody)
        return Data("storekeeper-response-v2\n\(nonce)\n\(method) \(target)\n\(digest)\n\(status)\n\(timestamp)\n\(keyId)\n".utf8) + body
    }

    /// `kid`, `ts` and the signature of a `Storekeeper-Signature` header.
    static func signatureFields(_ header: String) -> [String: String] {
        var fields: [String: String] = [:]
        for part in header.split(separator: ",").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        return fields
    }

    @Test("answers to a client call with a nonce are signed; another byte, nonce, path or key does not verify")
    func signedAnswers() async throws {
        let key = P256.Signing.PrivateKey()
        try await withStack(configure: { configuration in
            configuration.apps[0].client = ClientAccess(
                key: Self.clientKey, userTokens: UserTokenPolicy(hs256Secret: Self.secret),
                signingKeys: [ResponseSigningKey(id: "k1", privateKeyPEM: key.pemRepresentation)])
        }) { stack in
            let now = Int(stack.clock.now().timeIntervalSince1970)
            let (http, initial) = client(stack, token: try Self.token(["sub": "alice", "iat": now, "exp": now + 300]))
            let nonce = UserTokens.base64URL(Data((0..<24).map { _ in UInt8.random(in: 0...255) }))
            var headers = initial
            headers["Storekeeper-Nonce"] = nonce
            let reply = try await http.send(.GET, "/v1/subscribers/alice", headers: headers)
            #expect(reply.status == 200)
            let header = try #require(reply.headers["storekeeper-signature"], "signed")
            let fields = Self.signatureFields(header)
            #expect(header.hasPrefix("v2,") && fields["kid"] == "k1")
            let timestamp = try #require(fields["ts"])
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Data(base64Encoded: fields["sig"] ?? "")))
            let publicKey = key.publicKey
            let path = "/v1/subscribers/alice"
            func verifies(_ nonce: String, _ target: String, _ body: Data, _ with: P256.Signing.PublicKey) -> Bool {
                with.isValidSignature(
                    signature, for: Self.signedMessage(nonce: nonce, target: target, status: 200, timestamp: timestamp, keyId: "k1", body: body))
            }
            #expect(verifies(nonce, path, reply.body, publicKey))
            var tampered = reply.body
            tampered[tampered.count / 2] ^= 1
            #expect(!verifies(nonce, path, tampered, publicKey), "a changed byte")
            #expect(!verifies(nonce + "x", path, reply.body, publicKey), "a replay answers another nonce")
            #expect(!verifies(nonce, "/v1/subscribers/bob", reply.body, publicKey), "another user's answer")
            #expect(!verifies(nonce, path, reply.body, P256.Signing.PrivateKey().publicKey), "another key")

            // Every client route signs its 2xx answers.
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let postBody = try JSONEncoder().encode(TransactionPost(appUserId: "alice", signedTransaction: bought.signedTransaction))
            let posted = try await http.send(.POST, "/v1/transactions?\(TestWait.query)", headers: headers, body: postBody)
            let verificationId = posted.json["id"] as? String ?? ""
            // The answer to a post covers what was posted: the same answer does not verify as
            // the answer to another body (an older post passed off under a new nonce).
            let postFields = Self.signatureFields(posted.headers["storekeeper-signature"] ?? "")
            let postSignature = try P256.Signing.ECDSASignature(
                rawRepresentation: try #require(Data(base64Encoded: postFields["sig"] ?? "")))
            func postVerifies(_ requestBody: Data) -> Bool {
                publicKey.isValidSignature(
                    postSignature,
                    for: Self.signedMessage(
                        nonce: nonce, method: "POST", target: "/v1/transactions?\(TestWait.query)", requestBody: requestBody, status: posted.status,
                        timestamp: postFields["ts"] ?? "", keyId: "k1", body: posted.body))
            }
            #expect(postVerifies(postBody), "the post's answer verifies with its body")
            #expect(!postVerifies(postBody + Data(" ".utf8)), "and with no other body")
            let receipt = try await http.send(
                .POST, "/v1/receipts?\(TestWait.query)", headers: headers, body: Data(#"{"appUserId":"alice","receipt":"\#(bought.receipt)"}"#.utf8))
            let products = try await http.send(.GET, "/v1/products", headers: headers)
            let verification = try await http.send(.GET, "/v1/verifications/\(verificationId)", headers: headers)
            for (route, answer) in [("transactions", posted), ("receipts", receipt), ("products", products), ("verification", verification)] {
                #expect((200..<300).contains(answer.status) && answer.headers["storekeeper-signature"]?.hasPrefix("v2,kid=k1,") == true, "\(route)")
            }

            // No nonce, no signature; a malformed nonce is refused before any work.
            headers["Storekeeper-Nonce"] = nil
            #expect(try await http.send(.GET, "/v1/subscribers/alice", headers: headers).headers["storekeeper-signature"] == nil)
            headers["Storekeeper-Nonce"] = "short"
            let bad = try await http.send(.GET, "/v1/subscribers/alice", headers: headers)
            #expect(bad.status == 400 && bad.errorCode == "invalid_request")
        }
    }

    @Test("user tokens signed with any configured key pass (HS256, two ES256 in rotation, Ed25519); another key, another algorithm or none do not")
    func asymmetricUserTokens() async throws {
        let retiring = P256.Signing.PrivateKey()
        let p256 = P256.Signing.PrivateKey()
        let ed25519 = Curve25519.Signing.PrivateKey()
        let edPEMless = UserTokens.base64URL(ed25519.publicKey.rawRepresentation)
        try await withStack(configure: { configuration in
            configuration.apps[0].client = ClientAccess(
                key: Self.clientKey,
                userTokens: UserTokenPolicy(
                    hs256Secret: Self.secret, es256PublicKeysPEM: [retiring.publicKey.pemRepresentation, p256.publicKey.pemRepresentation],
                    eddsaPublicKeys: [edPEMless]))
        }) { stack in
            let now = Int(stack.clock.now().timeIntervalSince1970)
            let claims: [String: Any] = ["sub": "erin", "iat": now, "exp": now + 300]
            for (name, signer) in [
                ("HS256", UserTokens.Signer.hs256(secret: Self.secret)), ("ES256, retiring key", .es256(retiring)), ("ES256", .es256(p256)),
                ("EdDSA", .eddsa(ed25519)),
            ] {
                let (http, headers) = client(stack, token: try UserTokens.token(claims, signer: signer))
                let reply = try await http.send(.GET, "/v1/subscribers/erin", headers: headers)
                #expect(reply.status == 200, "\(name): \(reply.text)")
                let other = try await http.send(.GET, "/v1/subscribers/frank", headers: headers)
                #expect(other.status == 403 && other.errorCode == "other_user", "\(name)")
            }
            let unsigned =
                UserTokens.base64URL(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "."
                + UserTokens.base64URL(try JSONSerialization.data(withJSONObject: claims)) + "."
            for (name, bad) in [
                ("another P-256 key", try UserTokens.token(claims, signer: .es256(P256.Signing.PrivateKey()))),
                ("another Ed25519 key", try UserTokens.token(claims, signer: .eddsa(Curve25519.Signing.PrivateKey()))),
                // The public key used as an HMAC secret: the algorithm-confusion attack.
                ("HS256 keyed with the public key", try UserTokens.token(claims, signer: .hs256(secret: p256.publicKey.pemRepresentation))),
                ("HS256 keyed with the Ed25519 x", try UserTokens.token(claims, signer: .hs256(secret: edPEMless))),
                ("alg none", unsigned),
                ("expired", try UserTokens.token(["sub": "erin", "exp": now - 3_600], signer: .eddsa(ed25519))),
            ] {
                let (http, headers) = client(stack, token: bad)
                let reply = try await http.send(.GET, "/v1/subscribers/erin", headers: headers)
                #expect(reply.status == 401 && reply.errorCode == "invalid_user_token", "\(name): \(reply.text)")
                #expect(!APITests.namesASwiftType(reply.text), "\(name): \(reply.text)")
            }
        }
    }

    @Test("a user-token policy with a key that does not parse is refused at start, naming the key")
    func badUserTokenKeys() {
        var configuration = LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath())
        configuration.apps[0].client = ClientAccess(
            key: Self.clientKey, userTokens: UserTokenPolicy(es256PublicKeysPEM: ["not a key"], eddsaPublicKeys: ["AAAA"]))
        let problems = configuration.validationProblems()
        #expect(problems.contains { $0.contains("es256PublicKeysPEM[0]") }, "\(problems)")
        #expect(problems.contains { $0.contains("eddsaPublicKeys[0]") }, "\(problems)")
    }

    @Test("anonymous users: a signed transaction only for the user its appAccountToken was derived from; no receipts")
    func anonymous() async throws {
        try await withStack(configure: { configuration in
            configuration.apps[0].client = ClientAccess(key: Self.clientKey, allowAnonymous: true)
        }) { stack in
            let (http, headers) = client(stack, token: nil)
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let carols = try await stack.simulator.purchase(
                device: device, productId: "com.example.coins100", appAccountToken: AppAccountToken.derive(appUserId: "carol"))
            let stolen = try await http.send(
                .POST, "/v1/transactions", headers: headers, json: TransactionPost(appUserId: "dave", signedTransaction: carols.signedTransaction))
            #expect(stolen.status == 409 && stolen.errorCode == "app_account_token_mismatch", "\(stolen.text)")
            let posted = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: headers,
                json: TransactionPost(appUserId: "carol", signedTransaction: carols.signedTransaction))
            #expect(posted.status == 200 && posted.json["state"] as? String == "verified", "\(posted.text)")

            let untagged = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let refused = try await http.send(
                .POST, "/v1/transactions", headers: headers, json: TransactionPost(appUserId: "carol", signedTransaction: untagged.signedTransaction))
            #expect(refused.status == 403 && refused.errorCode == "other_user", "a purchase made for nobody proves nothing")
            let receipt = try await http.send(
                .POST, "/v1/receipts", headers: headers, body: Data(#"{"appUserId":"carol","receipt":"\#(untagged.receipt)"}"#.utf8))
            #expect(receipt.status == 401 && receipt.errorCode == "user_token_required", "\(receipt.text)")
            #expect(try await http.send(.GET, "/v1/subscribers/carol", headers: headers).status == 200)

            // Nor say who a user is.
            let attributes = try await http.send(
                .PATCH, "/v1/subscribers/carol/attributes", headers: headers, body: Data(#"{"email":"x@example.com"}"#.utf8))
            #expect(attributes.status == 401 && attributes.errorCode == "user_token_required", "\(attributes.text)")

            // An anonymous caller naming a user does not learn that user's own offering.
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let override = try await http.send(
                .PUT, "/v1/admin/apps/demo/subscribers/carol/offering-override", headers: admin, body: Data(#"{"offeringId":"no_ads"}"#.utf8))
            #expect(override.status == 200, "\(override.text)")
            let shown = try await http.send(.GET, "/v1/offerings?appUserId=carol", headers: headers)
            #expect(shown.status == 200 && shown.json["currentOfferingId"] as? String == "default", "\(shown.text)")
            let backend = try await http.send(
                .GET, "/v1/offerings?appUserId=carol", headers: ["Authorization": "Bearer \(DemoConfiguration.appApiKey)"])
            #expect(backend.json["currentOfferingId"] as? String == "no_ads" && backend.json["selectedBy"] as? String == "user_override")
        }
    }
}

/// The body of `POST /v1/transactions`.
private struct TransactionPost: Encodable {
    var appUserId: String
    var signedTransaction: String
}
