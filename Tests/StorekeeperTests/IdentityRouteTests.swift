import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Anonymous ids and `logIn` over real HTTP, on both backends: an anonymous purchase, then the
/// link to a known user under each policy, and the ownership attacks tried through aliases.
@Suite("identity: anonymous ids, logIn and aliases")
struct IdentityRouteTests {
    /// The demo app, taking anonymous calls besides user tokens.
    func configure(_ configuration: inout StorekeeperConfiguration, database: String?, policy: LogInPolicy) {
        if let database { configuration.databasePath = database }
        configuration.apps[0].client?.allowAnonymous = true
        configuration.apps[0].logInPolicy = policy
    }

    func post(_ http: HTTPJSONClient, _ signed: String, for user: String, headers: [String: String]) async throws -> HTTPJSONClient.Reply {
        let body = try JSONSerialization.data(withJSONObject: ["appUserId": user, "signedTransaction": signed])
        return try await http.send(.POST, "/v1/transactions?\(TestWait.query)", headers: headers, body: body)
    }

    func link(_ http: HTTPJSONClient, _ anonymousId: String, to user: String, headers: [String: String]) async throws -> HTTPJSONClient.Reply {
        try await http.send(
            .POST, "/v1/subscribers/\(user)/aliases", headers: headers, body: try JSONSerialization.data(withJSONObject: ["anonymousId": anonymousId])
        )
    }

    @Test(
        "transfer: bought anonymously, then logIn moves it to the known user; every alias reads the same subscriber; attacks through aliases fail",
        arguments: WebhookTests.backends)
    func transfer(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "identity") : nil
        try await withStack(configure: { configure(&$0, database: database, policy: .transfer) }) { stack in
            let http = stack.api.http
            let anon = AnonymousId.new()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(
                device: device, productId: "com.example.removeads", appAccountToken: AppAccountToken.derive(appUserId: anon))
            let anonymousPost = try await post(http, bought.signedTransaction, for: anon, headers: DemoCallers.anonymous)
            #expect(anonymousPost.status == 200 && anonymousPost.json["state"] as? String == "verified", "\(anonymousPost.text)")

            // Mallory knows nothing of it: she can neither read it, claim the purchase, nor link a known id.
            let mallory = try DemoCallers.client(as: "mallory")
            #expect(try await http.send(.GET, "/v1/subscribers/\(anon)", headers: mallory).status == 403)
            let stolen = try await post(http, bought.signedTransaction, for: "mallory", headers: mallory)
            #expect(stolen.status == 409 && stolen.errorCode == "app_account_token_mismatch", "\(stolen.text)")
            #expect(try await link(http, "alice", to: "mallory", headers: mallory).status == 400)
            #expect(try await link(http, anon, to: "alice", headers: DemoCallers.anonymous).status == 401, "an anonymous caller signs in no one")
            #expect(try await link(http, anon, to: "alice", headers: mallory).status == 403, "mallory's token is not alice's")
            let malformed = try await http.send(
                .GET, "/v1/subscribers/$anon:NOT-A-UUID", headers: ["Authorization": "Bearer \(DemoConfiguration.appApiKey)"])
            #expect(malformed.status == 400 && malformed.errorCode == "invalid_app_user_id")

            // alice signs in on the device: the purchase moves to her.
            let alice = try DemoCallers.client(as: "alice")
            let linked = try await link(http, anon, to: "alice", headers: alice)
            #expect(linked.status == 200 && linked.json["outcome"] as? String == "linked", "\(linked.text)")
            #expect(linked.json["transactionIds"] as? [String] == [bought.transactionId] && linked.json["aliases"] as? [String] == [anon])
            let again = try await link(http, anon, to: "alice", headers: alice)
            #expect(again.json["outcome"] as? String == "already_linked")
            let taken = try await link(http, anon, to: "mallory", headers: mallory)
            #expect(taken.status == 409, "\(taken.text)")

            let view = try await stack.api.subscriber("alice")
            #expect(view.activeEntitlements == ["com.example.removeads"] && view.entitlements["no_ads"]?.isActive == true)
            #expect(view.aliases == [anon])
            // Any alias reads the same subscriber, for alice and her backend; not for mallory.
            let viaAlias = try await http.send(.GET, "/v1/subscribers/\(anon)", headers: alice)
            #expect(viaAlias.status == 200 && viaAlias.json["appUserId"] as? String == "alice")
            #expect(try await stack.api.subscriber(anon).appUserId == "alice")
            #expect(try await http.send(.GET, "/v1/subscribers/\(anon)", headers: mallory).status == 403)
            let events = try await stack.api.events("?limit=50").filter { $0.event.appUserId == "alice" }.map(\.event)
            #expect(events.map(\.type) == [.transfer, .entitlementGranted], "\(events.map(\.type))")
            #expect(events.first?.details?.fromAppUserId == anon && events.first?.originalTransactionId == bought.originalTransactionId)

            // The device still buys with the anonymous token: those purchases are alice's too,
            // whoever posts them for her; still never mallory's.
            let later = try await stack.simulator.purchase(
                device: device, productId: "com.example.coins100", appAccountToken: AppAccountToken.derive(appUserId: anon))
            #expect(try await post(http, later.signedTransaction, for: "mallory", headers: mallory).status == 409)
            #expect(try await post(http, later.signedTransaction, for: "alice", headers: alice).status == 200)
            #expect(try await stack.api.subscriber("alice").creditBalance == 100)
            let more = try await stack.simulator.purchase(
                device: device, productId: "com.example.coins100", appAccountToken: AppAccountToken.derive(appUserId: anon))
            // Linked, the anonymous id speaks for alice: without her token it is refused (the
            // purchase stays pending on the device), with it the purchase is hers.
            let anonymousAfterLink = try await post(http, more.signedTransaction, for: anon, headers: DemoCallers.anonymous)
            #expect(anonymousAfterLink.status == 401 && anonymousAfterLink.errorCode == "user_token_required", "\(anonymousAfterLink.text)")
            #expect(try await http.send(.GET, "/v1/subscribers/\(anon)", headers: DemoCallers.anonymous).status == 401)
            #expect(try await post(http, more.signedTransaction, for: anon, headers: alice).status == 200)
            #expect(try await stack.api.subscriber("alice").creditBalance == 200)
        }
    }

    @Test(
        "without a user token the public key reaches only an anonymous id nobody has taken: a signed-in user's record, credits, events and purchases are refused",
        arguments: WebhookTests.backends)
    func anonymousCallerReadsNoSignedInUser(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "identity") : nil
        try await withStack(configure: { configure(&$0, database: database, policy: .transfer) }) { stack in
            let http = stack.api.http
            let alice = try DemoCallers.client(as: "alice")
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let coins = try await stack.simulator.purchase(
                device: device, productId: "com.example.coins100", appAccountToken: AppAccountToken.derive(appUserId: "alice"))
            #expect(try await post(http, coins.signedTransaction, for: "alice", headers: alice).status == 200)
            let attributes = try JSONSerialization.data(withJSONObject: ["email": "alice@example.com", "displayName": "Alice Liddell"])
            #expect(try await http.send(.PATCH, "/v1/subscribers/alice/attributes", headers: alice, body: attributes).status == 200)

            // The stranger has the public key and nothing else: every route that names alice,
            // with the id as she signed in and as it could be spelled, answers 401 and names nothing of hers.
            for (method, path) in [
                (HTTPMethod.GET, "/v1/subscribers/alice"), (.GET, "/v1/subscribers/alice/credits"),
                (.GET, "/v1/subscribers/alice/offers/win-back"), (.GET, "/v1/offerings?appUserId=alice"),
            ] {
                let reply = try await http.send(method, path, headers: DemoCallers.anonymous)
                #expect(reply.status == 401 && reply.errorCode == "user_token_required", "\(path): \(reply.text)")
                #expect(!reply.text.contains("alice@example.com") && !reply.text.contains("Liddell"), "\(path): \(reply.text)")
            }
            let spend = try JSONSerialization.data(withJSONObject: ["amount": 1, "reason": "stranger"])
            let spent = try await http.send(.POST, "/v1/subscribers/alice/credits/spend", headers: DemoCallers.anonymous, body: spend)
            #expect(spent.status == 401 || spent.status == 403, "\(spent.text)")
            let more = try await stack.simulator.purchase(
                device: device, productId: "com.example.coins100", appAccountToken: AppAccountToken.derive(appUserId: "alice"))
            #expect(try await post(http, more.signedTransaction, for: "alice", headers: DemoCallers.anonymous).status == 401)
            #expect(try await stack.api.subscriber("alice").creditBalance == 100, "nothing spent, nothing granted by the stranger")

            // Having a token is never worth less than having none: a signed-in stranger is refused too.
            #expect(try await http.send(.GET, "/v1/subscribers/alice", headers: try DemoCallers.client(as: "mallory")).status == 403)
            // An anonymous id of its own, unlinked, is the anonymous caller's to read.
            let anon = AnonymousId.new()
            let own = try await http.send(.GET, "/v1/subscribers/\(anon)", headers: DemoCallers.anonymous)
            #expect(own.status == 200 && own.json["appUserId"] as? String == anon, "\(own.text)")
        }
    }

    @Test("keep: an anonymous id that owns a purchase keeps it and is not linked; one that owns nothing is", arguments: WebhookTests.backends)
    func keep(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "identity") : nil
        try await withStack(configure: { configure(&$0, database: database, policy: .keep) }) { stack in
            let http = stack.api.http
            let owner = AnonymousId.new()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(
                device: device, productId: "com.example.removeads", appAccountToken: AppAccountToken.derive(appUserId: owner))
            #expect(try await post(http, bought.signedTransaction, for: owner, headers: DemoCallers.anonymous).status == 200)
            let alice = try DemoCallers.client(as: "alice")
            let kept = try await link(http, owner, to: "alice", headers: alice)
            #expect(kept.status == 200 && kept.json["outcome"] as? String == "kept_with_anonymous", "\(kept.text)")
            #expect(kept.json["transactionIds"] as? [String] == [bought.transactionId] && (kept.json["aliases"] as? [String])?.isEmpty == true)
            #expect(try await stack.api.subscriber("alice").activeEntitlements.isEmpty)
            #expect(try await stack.api.subscriber(owner).activeEntitlements == ["com.example.removeads"])
            let empty = AnonymousId.new()
            let linked = try await link(http, empty, to: "alice", headers: alice)
            #expect(linked.json["outcome"] as? String == "linked" && linked.json["aliases"] as? [String] == [empty], "\(linked.text)")
        }
    }
}
