import AppStoreClient
import AppStoreModels
import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// The 2025-2026 App Store Server API calls an operator makes through Storekeeper's admin API,
/// each over real HTTP: test → Storekeeper → the simulator's Server API, and the simulator's
/// `/sim` routes show what reached "Apple".
@Suite("Apple actions: finish, app account token, consumption v2, app transaction")
struct AppleActionsTests {
    static let base = "/v1/admin/apps/demo/transactions"

    func admin(_ stack: LocalStack) -> [String: String] { ["Authorization": "Bearer \(stack.api.adminKey)"] }

    /// A sandbox consumable bought in the simulator, and a way to ask the simulator whether it
    /// was finished there.
    func sandboxCoins(_ stack: LocalStack) async throws -> (SimulatorClient.Purchase, @Sendable () async throws -> Bool?) {
        let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
        let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
        let simulator = stack.simulator
        return (
            coins,
            { try await simulator.http.send(.GET, "/sim/transactions/\(coins.transactionId)/finished").json["finished"] as? Bool }
        )
    }

    @Test("Finish Transaction reaches Apple for a known id; unknown, malformed and unauthenticated calls are refused")
    func finish() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let (coins, finishedAtApple) = try await sandboxCoins(stack)
            #expect(try await finishedAtApple() == false)

            let refused = try await http.send(.POST, "\(Self.base)/\(coins.transactionId)/finish")
            #expect(refused.status == 401 && refused.errorCode == "unauthorized")
            #expect(try await finishedAtApple() == false)

            // No environment given: production does not know it, the sandbox does.
            let done = try await http.send(.POST, "\(Self.base)/\(coins.transactionId)/finish", headers: admin(stack))
            #expect(done.status == 200, "\(done.text)")
            #expect(done.json["environment"] as? String == "sandbox" && done.json["finished"] as? Bool == true)
            #expect(try await finishedAtApple() == true)

            let unknown = try await http.send(.POST, "\(Self.base)/999999999999/finish", headers: admin(stack))
            #expect(unknown.status == 404 && unknown.errorCode == "not_found" && unknown.text.contains("4040010"), "\(unknown.text)")
            let malformed = try await http.send(.POST, "\(Self.base)/abc%20def/finish", headers: admin(stack))
            #expect(malformed.status == 400 && malformed.errorCode == "invalid_request", "\(malformed.text)")
            let wrongPlace = try await http.send(
                .POST, "\(Self.base)/\(coins.transactionId)/finish?environment=production", headers: admin(stack))
            #expect(wrongPlace.status == 404, "\(wrongPlace.text)")
            let badEnvironment = try await http.send(
                .POST, "\(Self.base)/\(coins.transactionId)/finish?environment=staging", headers: admin(stack))
            #expect(badEnvironment.status == 400 && badEnvironment.errorCode == "invalid_request")
        }
    }

    @Test("Set App Account Token binds an old purchase to a user's derived token; Apple's refusals keep Apple's code")
    func appAccountToken() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let path = "\(Self.base)/\(sub.originalTransactionId)/app-account-token"

            let set = try await http.send(.PUT, path, headers: admin(stack), json: ["appUserId": "frank smith"])
            #expect(set.status == 200, "\(set.text)")
            let derived = AppAccountToken.derive(appUserId: "frank smith")
            #expect(set.json["appAccountToken"] as? String == derived && set.json["environment"] as? String == "production")

            // What Apple signs from now on carries the token, so a StoreKit 2 post of it for that
            // user passes the server's token check.
            let app = stack.configuration.apps[0]
            let apple = AppStoreServerAPIClient(
                httpClient: stack.httpClient, endpoints: stack.configuration.serverAPIEndpoints,
                tokens: try ServerAPITokenProvider(credentials: try #require(app.serverAPICredentials)))
            let signed = try #require(try await apple.transactionInfo(sub.transactionId).0.signedTransactionInfo)
            #expect(try jwsPayload(signed)["appAccountToken"] as? String == derived)
            let posted = try await stack.api.postSignedTransaction(
                appUserId: "frank smith", signedTransaction: signed, appAccountToken: derived, wait: TestWait.seconds)
            #expect(posted.status == 200, "\(posted.text)")
            #expect(try await stack.api.subscriber("frank smith").activeEntitlements.contains("com.example.pro.monthly"))

            // An explicit UUID is taken as given (lower-cased).
            let uuid = UUID()
            let explicit = try await http.send(.PUT, path, headers: admin(stack), json: ["appAccountToken": uuid.uuidString])
            #expect(explicit.status == 200 && explicit.json["appAccountToken"] as? String == uuid.uuidString.lowercased())

            for body in [#"{"appAccountToken":"not-a-uuid"}"#, #"{}"#, #"{"appAccountToken":"\#(uuid)","appUserId":"x"}"#, "[]"] {
                let bad = try await http.send(.PUT, path, headers: admin(stack), body: Data(body.utf8))
                #expect(bad.status == 400, "\(body): \(bad.text)")
            }

            // A purchase shared through Family Sharing: Apple's 4000185, passed on as a refusal.
            let member = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let shared = try await stack.simulator.shareWithFamily(transactionId: sub.transactionId, member: member)
            let family = try await http.send(
                .PUT, "\(Self.base)/\(shared.originalTransactionId)/app-account-token", headers: admin(stack), json: ["appUserId": "kid"])
            #expect(family.status == 422 && family.errorCode == "apple_rejected" && family.text.contains("4000185"), "\(family.text)")
        }
    }

    @Test("Send Consumption Information v2 reaches Apple as sent; a body Apple would refuse is a 400 naming the field")
    func consumption() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let path = "\(Self.base)/\(coins.transactionId)/consumption"
            let recorded = { try await stack.simulator.http.send(.GET, "/sim/consumption-v2/\(coins.transactionId)") }

            let bad: [(String, String)] = [
                (#"{"customerConsented":false,"sampleContentProvided":false,"deliveryStatus":"DELIVERED"}"#, "customerConsented"),
                (#"{"customerConsented":true,"deliveryStatus":"DELIVERED"}"#, "sampleContentProvided"),
                (#"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"LOST"}"#, "deliveryStatus"),
                (
                    #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED","consumptionPercentage":100001}"#,
                    "consumptionPercentage"
                ),
                (
                    #"{"customerConsented":true,"sampleContentProvided":false,"deliveryStatus":"DELIVERED","refundPreference":"MAYBE"}"#,
                    "refundPreference"
                ),
            ]
            for (body, field) in bad {
                let reply = try await http.send(.PUT, path, headers: admin(stack), body: Data(body.utf8))
                #expect(reply.status == 400 && reply.errorCode == "invalid_request" && reply.text.contains(field), "\(body): \(reply.text)")
            }
            #expect(try await recorded().status == 404, "nothing refused here may reach Apple")

            let good = ConsumptionRequestV2(
                customerConsented: true, sampleContentProvided: false, deliveryStatus: "DELIVERED", consumptionPercentage: 25_000,
                refundPreference: "GRANT_PRORATED")
            let sent = try await http.send(.PUT, path, headers: admin(stack), json: good)
            #expect(sent.status == 202 && sent.json["environment"] as? String == "production", "\(sent.text)")
            let atApple = try await recorded()
            #expect(atApple.status == 200)
            #expect(try JSONDecoder().decode(ConsumptionRequestV2.self, from: atApple.body) == good)
        }
    }

    @Test("Get App Transaction Info: verified, with the customer's appTransactionId, found from any of their transaction ids")
    func appTransaction() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let expected = try #require(try jwsPayload(coins.signedTransaction)["appTransactionId"] as? String)

            for id in [coins.transactionId, expected] {
                let reply = try await http.send(.GET, "\(Self.base)/\(id)/app-transaction", headers: admin(stack))
                #expect(reply.status == 200, "\(reply.text)")
                let app = try #require(reply.json["appTransaction"] as? [String: Any])
                #expect(app["appTransactionId"] as? String == expected && app["bundleId"] as? String == demoBundle)
                #expect(reply.json["environment"] as? String == "production")
            }
            let unknown = try await http.send(.GET, "\(Self.base)/999999999999/app-transaction", headers: admin(stack))
            #expect(unknown.status == 404, "\(unknown.text)")
        }
    }

    @Test("Look Up Order Id: the order's transactions verified; an order Apple does not know is not valid; a malformed id is a 400")
    func orderLookup() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            // The simulator's order ids are its original transaction ids.
            let path = "/v1/admin/apps/demo/orders/\(sub.originalTransactionId)"
            #expect(try await http.send(.GET, path).status == 401)
            let found = try await http.send(.GET, path, headers: admin(stack))
            #expect(found.status == 200, "\(found.text)")
            #expect(found.json["valid"] as? Bool == true && found.json["environment"] as? String == "production")
            let transactions = try #require(found.json["transactions"] as? [[String: Any]])
            #expect(transactions.compactMap { $0["transactionId"] as? String } == [sub.transactionId])
            #expect(transactions.first?["bundleId"] as? String == demoBundle)

            let unknown = try await http.send(.GET, "/v1/admin/apps/demo/orders/MK5TTTVWJH", headers: admin(stack))
            #expect(unknown.status == 200 && unknown.json["valid"] as? Bool == false, "\(unknown.text)")
            #expect((unknown.json["transactions"] as? [Any])?.isEmpty == true)
            let malformed = try await http.send(.GET, "/v1/admin/apps/demo/orders/MK5-TTT", headers: admin(stack))
            #expect(malformed.status == 400 && malformed.errorCode == "invalid_request", "\(malformed.text)")
        }
    }

    @Test("Get Refund History: none before a refund; after it, the refunded transaction verified, with its revocation")
    func refundHistory() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let path = "\(Self.base)/\(coins.transactionId)/refunds"
            let before = try await http.send(.GET, path, headers: admin(stack))
            #expect(before.status == 200, "\(before.text)")
            #expect((before.json["refunds"] as? [Any])?.isEmpty == true)

            try await stack.simulator.refund(transactionId: coins.transactionId)
            let after = try await http.send(.GET, path, headers: admin(stack))
            #expect(after.status == 200 && after.json["environment"] as? String == "production", "\(after.text)")
            let refunds = try #require(after.json["refunds"] as? [[String: Any]])
            #expect(refunds.count == 1)
            #expect(refunds.first?["transactionId"] as? String == coins.transactionId && refunds.first?["revocationDate"] != nil)
            #expect(try await http.send(.GET, "\(Self.base)/999999999999/refunds", headers: admin(stack)).status == 404)
        }
    }

    @Test("Extend a Subscription Renewal Date: Apple moves the expiry; a body Apple would refuse is a 400 naming each field")
    func renewalExtension() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let path = "/v1/admin/apps/demo/subscriptions/\(sub.originalTransactionId)/renewal-extension"
            let body = ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: 3, requestIdentifier: UUID().uuidString)
            #expect(try await http.send(.PUT, path, json: body).status == 401)

            let bad = try await http.send(
                .PUT, path, headers: admin(stack), json: ExtendRenewalDateRequest(extendByDays: 91, extendReasonCode: 7, requestIdentifier: "again"))
            #expect(bad.status == 400 && bad.errorCode == "invalid_request", "\(bad.text)")
            for field in ["extendByDays", "extendReasonCode", "requestIdentifier"] { #expect(bad.text.contains(field), "\(field)") }

            let expiry = { (transaction: [String: Any]) in (transaction["expiresDate"] as? NSNumber)?.int64Value }
            let order = try await http.send(.GET, "/v1/admin/apps/demo/orders/\(sub.originalTransactionId)", headers: admin(stack))
            let first = try #require((order.json["transactions"] as? [[String: Any]])?.first)
            let before = try #require(expiry(first))
            let extended = try await http.send(.PUT, path, headers: admin(stack), json: body)
            #expect(extended.status == 200, "\(extended.text)")
            #expect(extended.json["extended"] as? Bool == true && extended.json["originalTransactionId"] as? String == sub.originalTransactionId)
            #expect(extended.json["requestIdentifier"] as? String == body.requestIdentifier)
            let effective = try #require(extended.json["effectiveDate"] as? String)
            let effectiveDate = try Date(effective, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true))
            let effectiveMs = Int64((effectiveDate.timeIntervalSince1970 * 1000).rounded())
            #expect(effectiveMs > before, "the new expiry \(effective) is later than \(before)")

            let unknown = try await http.send(
                .PUT, "/v1/admin/apps/demo/subscriptions/999999999999/renewal-extension", headers: admin(stack), json: body)
            #expect(unknown.status == 404, "\(unknown.text)")
        }
    }

    @Test("Extend Subscription Renewal Dates for All Active Subscribers: accepted, its status polled, run once per request identifier")
    func massRenewalExtension() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            var subs: [SimulatorClient.Purchase] = []
            for _ in 0..<2 {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                subs.append(try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly"))
            }
            let expiry = { (id: String) async throws -> Int64? in
                let order = try await http.send(.GET, "/v1/admin/apps/demo/orders/\(id)", headers: admin(stack))
                return ((order.json["transactions"] as? [[String: Any]])?.first?["expiresDate"] as? NSNumber)?.int64Value
            }
            let before = try await expiry(subs[0].originalTransactionId)
            let path = "/v1/admin/apps/demo/products/com.example.pro.monthly/renewal-extension"
            let identifier = UUID().uuidString
            let body = MassExtendRenewalDateRequest(
                extendByDays: 3, extendReasonCode: 3, requestIdentifier: identifier, productId: "ignored: the path names it")
            #expect(try await http.send(.POST, path, json: body).status == 401)

            let accepted = try await http.send(.POST, path, headers: admin(stack), json: body)
            #expect(accepted.status == 202, "\(accepted.text)")
            #expect(accepted.json["requestIdentifier"] as? String == identifier && accepted.json["environment"] as? String == "production")
            let status = try await http.send(.GET, "\(path)/\(identifier)", headers: admin(stack))
            #expect(status.status == 200, "\(status.text)")
            #expect(status.json["complete"] as? Bool == true && status.json["completeDate"] is String)
            #expect(status.json["succeededCount"] as? Int == 2 && status.json["failedCount"] as? Int == 0)
            let after = try await expiry(subs[0].originalTransactionId)
            #expect(after != nil && before != nil && after! > before!, "\(String(describing: before)) → \(String(describing: after))")

            // The same request identifier again: Apple does not run it twice.
            #expect(try await http.send(.POST, path, headers: admin(stack), json: body).status == 202)
            #expect(try await expiry(subs[0].originalTransactionId) == after)

            let bad = try await http.send(
                .POST, path, headers: admin(stack),
                json: MassExtendRenewalDateRequest(extendByDays: 0, extendReasonCode: 9, requestIdentifier: "x", productId: ""))
            #expect(
                bad.status == 400 && ["extendByDays", "extendReasonCode", "requestIdentifier"].allSatisfy { bad.text.contains($0) }, "\(bad.text)")
            let consumable = try await http.send(
                .POST, "/v1/admin/apps/demo/products/com.example.coins100/renewal-extension", headers: admin(stack), json: body)
            #expect(consumable.status == 404 && consumable.text.contains("consumable"), "\(consumable.text)")
            let unknown = try await http.send(
                .POST, "/v1/admin/apps/demo/products/no.such.product/renewal-extension", headers: admin(stack), json: body)
            #expect(unknown.status == 404, "\(unknown.text)")
            #expect(try await http.send(.GET, "\(path)/not-a-uuid", headers: admin(stack)).status == 400)
            #expect(try await http.send(.GET, "\(path)/\(UUID().uuidString)", headers: admin(stack)).status == 404)
        }
    }

    @Test(
        "while the Server API is known to be down (another process's shared row), an action answers apple_unavailable at once without calling Apple; once it is back, it goes"
    )
    func serverAPIDown() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let http = stack.api.http
            let (coins, finishedAtApple) = try await sandboxCoins(stack)
            let callsToApple = { try await stack.simulator.stats().filter { $0.key.hasPrefix("serverapi.sandbox.") }.values.reduce(0, +) }
            let now = Date()
            #expect(try await stack.store.moveSharedAppleHealth(endpoint: "server_api_sandbox", to: .down, at: now) { _ in nil })
            let before = try await callsToApple()
            let path = "\(Self.base)/\(coins.transactionId)/finish?environment=sandbox"
            let refused = try await http.send(.POST, path, headers: admin(stack))
            #expect(refused.status == 502 && refused.errorCode == "apple_unavailable" && refused.text.contains("down since"), "\(refused.text)")
            #expect(try await callsToApple() == before, "Apple was not called")
            #expect(try await finishedAtApple() == false)

            // Another process saw it answer again. (What this one read is kept for a second of
            // the server's clock, which the stack moves.)
            #expect(
                try await stack.store.moveSharedAppleHealth(endpoint: "server_api_sandbox", to: .healthy, at: now.addingTimeInterval(1)) { _ in nil })
            stack.clock.advance(by: 1.1)
            let done = try await http.send(.POST, path, headers: admin(stack))
            #expect(done.status == 200, "\(done.text)")
            #expect(try await finishedAtApple() == true)
        }
    }

    @Test("an app without an In-App Purchase key cannot ask Apple")
    func notConfigured() async throws {
        try await withStack { stack in
            let reply = try await stack.api.http.send(
                .POST, "\(Self.base)/123/finish", headers: ["Authorization": "Bearer \(stack.api.adminKey)"])
            #expect(reply.status == 409 && reply.errorCode == "server_api_not_configured", "\(reply.text)")
        }
    }
}
