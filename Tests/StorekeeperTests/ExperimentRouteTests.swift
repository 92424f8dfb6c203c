import AppStoreSimulator
import Foundation
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Experiments on offerings over real HTTP, on both backends: an operator starts one, proved
/// users are enrolled once in the arm the documented hash gives, from any device, after `logIn`
/// (the earlier enrollment wins) and on another server process; nobody chooses an arm by what
/// the app sends, and a stop ends it.
@Suite("experiments: enrollment by the server's hash, stable across devices, logIn and processes")
struct ExperimentRouteTests {
    let admin = [
        "Authorization": "Bearer \(DemoConfiguration.adminKey)", "Storekeeper-Actor": "maria@example.com", "Storekeeper-Reason": "pricing test",
    ]
    /// The experiment as created below: the demo's two offerings, half each.
    let pricing = Experiment(
        id: "pricing", arms: [Experiment.Arm(offering: "default", weight: 1), Experiment.Arm(offering: "no_ads", weight: 1)], startsAt: Date())

    func offerings(_ http: HTTPJSONClient, _ query: String = "", headers: [String: String]) async throws -> [String: Any] {
        let reply = try await http.send(.GET, "/v1/offerings\(query)", headers: headers)
        #expect(reply.status == 200, "\(query): \(reply.text)")
        return reply.json
    }

    func arm(_ answer: [String: Any]) -> (arm: Int?, offering: String?, enrolledAt: String?) {
        let experiment = answer["experiment"] as? [String: Any]
        return (experiment?["arm"] as? Int, answer["currentOfferingId"] as? String, experiment?["enrolledAt"] as? String)
    }

    @Test(
        "created and refused by the operator; users enrolled once in their hash's arm; anonymous callers and other users' tokens learn nothing; logIn keeps the earlier arm; another process agrees; a stop ends it; the winner shipped once",
        arguments: WebhookTests.backends)
    func enrollment(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "experiments") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
            configuration.apps[0].client?.allowAnonymous = true
            configuration.apps[0].logInPolicy = .transfer
        }) { stack in
            stack.clock.freeze()
            let http = stack.api.http
            let start = ISO8601DateFormatter().string(from: stack.clock.now().addingTimeInterval(-60))
            let body = #"{"arms":[{"offering":"default","weight":1},{"offering":"no_ads","weight":1}],"startsAt":"\#(start)"}"#
            // Refusals first: nothing is stored by them.
            for (path, refused, status) in [
                ("pricing", #"{"arms":[{"offering":"default","weight":1}],"startsAt":"\#(start)"}"#, 400),
                ("pricing", #"{"arms":[{"offering":"default","weight":1},{"offering":"default","weight":2}],"startsAt":"\#(start)"}"#, 400),
                ("pricing", #"{"arms":[{"offering":"default","weight":0},{"offering":"no_ads","weight":1}],"startsAt":"\#(start)"}"#, 400),
                ("pricing", #"{"arms":[{"offering":"default","weight":1},{"offering":"nope","weight":1}],"startsAt":"\#(start)"}"#, 404),
                ("pricing", #"{"arms":[{"offering":"nope","weight":1},{"offering":"nope","weight":1}],"startsAt":"\#(start)"}"#, 404),
                (
                    "pricing",
                    #"{"arms":[{"offering":"default","weight":1},{"offering":"no_ads","weight":1}],"startsAt":"\#(start)","stoppedAt":"\#(start)"}"#,
                    400
                ),
                ("bad id", body, 400),
            ] {
                let path = path.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? path
                let reply = try await http.send(.PUT, "/v1/admin/apps/demo/experiments/\(path)", headers: admin, body: Data(refused.utf8))
                #expect(reply.status == status, "\(refused): \(reply.text)")
            }
            let client = try DemoCallers.client(as: "alice")
            let refusedClient = try await http.send(.PUT, "/v1/admin/apps/demo/experiments/pricing", headers: client, body: Data(body.utf8))
            #expect(refusedClient.status == 403, "\(refusedClient.text)")
            #expect(try await http.send(.GET, "/v1/admin/apps/demo/experiments", headers: admin).json["experiments"] as? [Any] != nil)
            #expect((try await http.send(.GET, "/v1/admin/apps/demo/experiments", headers: admin).json["experiments"] as? [Any])?.isEmpty == true)

            let created = try await http.send(.PUT, "/v1/admin/apps/demo/experiments/pricing", headers: admin, body: Data(body.utf8))
            #expect(created.status == 201, "\(created.text)")
            let twice = try await http.send(.PUT, "/v1/admin/apps/demo/experiments/pricing", headers: admin, body: Data(body.utf8))
            #expect(twice.status == 409 && twice.errorCode == "conflict", "an id is created once: \(twice.text)")
            let another = try await http.send(.PUT, "/v1/admin/apps/demo/experiments/other", headers: admin, body: Data(body.utf8))
            #expect(another.status == 409, "one experiment at a time: \(another.text)")

            // alice's token: enrolled in her hash's arm, the same on every ask and from her backend.
            let aliceArm = pricing.arm(for: "alice")
            let first = try await offerings(http, headers: client)
            #expect(first["selectedBy"] as? String == "experiment", "\(first)")
            #expect(arm(first).arm == aliceArm && arm(first).offering == pricing.arms[aliceArm].offering)
            stack.clock.advance(by: 1)
            #expect(arm(try await offerings(http, headers: client)) == arm(first), "enrolled once: the same arm and instant")
            #expect(arm(try await offerings(http, "?appUserId=alice", headers: DemoCallers.backend)) == arm(first))
            // Nothing the app sends chooses: a storefront with a rule of its own, made-up parameters.
            let asked = try await http.send(.GET, "/v1/offerings?storefront=FRA&experiment=pricing&arm=0&arm=1", headers: client)
            if asked.status == 200 { #expect(arm(asked.json) == arm(first), "\(asked.text)") } else { #expect(asked.status == 400) }

            // An anonymous caller is enrolled as nobody, even naming an anonymous id of its own
            // (ids it makes up would let it pick an arm); naming alice it is refused, and bob's
            // token cannot read hers.
            for query in ["", "?appUserId=\(AnonymousId.new())"] {
                let anonymous = try await offerings(http, query, headers: DemoCallers.anonymous)
                #expect(anonymous["experiment"] == nil && anonymous["selectedBy"] as? String == "current", "\(anonymous)")
            }
            let naming = try await http.send(.GET, "/v1/offerings?appUserId=alice", headers: DemoCallers.anonymous)
            #expect(naming.status == 401 && !naming.text.contains("experiment"), "\(naming.text)")
            let prying = try await http.send(.GET, "/v1/offerings?appUserId=alice", headers: try DemoCallers.client(as: "bob"))
            #expect(prying.status == 403 && prying.errorCode == "other_user" && !prying.text.contains("experiment"))

            // A device enrolled anonymously (through the backend), then its user signs in: the
            // earlier enrollment is the customer's, whichever arm the user's own id hashes to.
            var anon = AnonymousId.new()
            while pricing.arm(for: anon) == pricing.arm(for: "carol") { anon = AnonymousId.new() }
            let device = arm(try await offerings(http, "?appUserId=\(anon)", headers: DemoCallers.backend))
            #expect(device.arm == pricing.arm(for: anon))
            stack.clock.advance(by: 1)
            let carol = try DemoCallers.client(as: "carol")
            #expect(arm(try await offerings(http, headers: carol)).arm == pricing.arm(for: "carol"))
            let linked = try await http.send(
                .POST, "/v1/subscribers/carol/aliases", headers: carol, body: try JSONSerialization.data(withJSONObject: ["anonymousId": anon]))
            #expect(linked.status == 200, "\(linked.text)")
            #expect(arm(try await offerings(http, headers: carol)) == device, "the earlier enrollment wins after logIn")

            // Another server process on the same database answers the same.
            let path = database ?? stack.configuration.databasePath
            let second = try await stack.startIndependentServer(databasePath: path, runWorkers: false)
            let elsewhere = try await offerings(second.api.http, headers: client)
            #expect(arm(elsewhere) == arm(first), "\(elsewhere)")
            try await second.stop()

            // alice buys: her arm has one paying customer of its enrolled; carol (enrolled first
            // as the anonymous device) counts once.
            let phone = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(
                device: phone, productId: "com.example.removeads", appAccountToken: AppAccountToken.derive(appUserId: "alice"))
            let posted = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: client,
                body: try JSONSerialization.data(withJSONObject: ["appUserId": "alice", "signedTransaction": bought.signedTransaction]))
            #expect(posted.status == 200 && posted.json["state"] as? String == "verified", "\(posted.text)")
            let results = try await http.send(.GET, "/v1/admin/apps/demo/experiments/pricing/results", headers: admin)
            let arms = (results.json["arms"] as? [[String: Any]]) ?? []
            #expect(results.status == 200 && arms.count == 2, "\(results.text)")
            #expect(arms.compactMap { $0["enrolled"] as? Int }.reduce(0, +) == 2, "alice and carol: \(results.text)")
            #expect(arms.compactMap { $0["payingCustomers"] as? Int }.reduce(0, +) == 1 && arms[aliceArm]["payingCustomers"] as? Int == 1)
            #expect((arms[aliceArm]["initialConversion"] as? [String: Any])?["successes"] as? Int == 1)
            #expect(try await http.send(.GET, "/v1/admin/apps/demo/experiments/none/results", headers: admin).status == 404)
            #expect(try await http.send(.GET, "/v1/admin/apps/demo/experiments/pricing/results", headers: client).status == 403)

            // Each enrollment is an event in the feed, once: alice's with her arm.
            let feed = try await http.send(.GET, "/v1/events?types=experiment_enrolled&limit=50", headers: DemoCallers.backend)
            let enrolledEvents = ((feed.json["events"] as? [[String: Any]]) ?? []).compactMap { $0["event"] as? [String: Any] }
            #expect(enrolledEvents.count == 3, "alice, the anonymous device, carol: \(feed.text)")
            let aliceEvent = enrolledEvents.first { $0["appUserId"] as? String == "alice" }
            #expect((aliceEvent?["details"] as? [String: Any])?["arm"] as? Int == aliceArm, "\(feed.text)")

            // The stop: everyone sees the targeting again; a second stop is refused.
            #expect(try await http.send(.POST, "/v1/admin/apps/demo/experiments/pricing/stop", headers: admin).status == 204)
            let after = try await offerings(http, headers: client)
            #expect(after["experiment"] == nil && after["selectedBy"] as? String == "current", "\(after)")
            let again = try await http.send(.POST, "/v1/admin/apps/demo/experiments/pricing/stop", headers: admin)
            #expect(again.status == 409, "\(again.text)")
            #expect(try await http.send(.POST, "/v1/admin/apps/demo/experiments/none/stop", headers: admin).status == 404)
            // Shipping the winner: arm 1's offering becomes current for everyone no rule chooses
            // for; once; an arm it lacks, an experiment nobody made and a client are refused.
            for (path, body, status) in [
                ("pricing", #"{"arm":7}"#, 400), ("pricing", #"{"arm":1,"offering":"default"}"#, 400), ("none", #"{"arm":1}"#, 404),
            ] {
                let refused = try await http.send(.POST, "/v1/admin/apps/demo/experiments/\(path)/ship", headers: admin, body: Data(body.utf8))
                #expect(refused.status == status, "\(body): \(refused.text)")
            }
            let byClient = try await http.send(.POST, "/v1/admin/apps/demo/experiments/pricing/ship", headers: client, body: Data(#"{"arm":1}"#.utf8))
            #expect(byClient.status == 403)
            #expect(try await offerings(http, "?appUserId=dave", headers: DemoCallers.backend)["currentOfferingId"] as? String == "default")
            let shipped = try await http.send(.POST, "/v1/admin/apps/demo/experiments/pricing/ship", headers: admin, body: Data(#"{"arm":1}"#.utf8))
            #expect(shipped.status == 204, "\(shipped.text)")
            let dave = try await offerings(http, "?appUserId=dave", headers: DemoCallers.backend)
            #expect(dave["currentOfferingId"] as? String == "no_ads" && dave["selectedBy"] as? String == "current", "\(dave)")
            let shippedTwice = try await http.send(
                .POST, "/v1/admin/apps/demo/experiments/pricing/ship", headers: admin, body: Data(#"{"arm":0}"#.utf8))
            #expect(shippedTwice.status == 409, "\(shippedTwice.text)")
            let listed = try await http.send(.GET, "/v1/admin/apps/demo/experiments", headers: admin)
            let stored = (listed.json["experiments"] as? [[String: Any]])?.first
            #expect(stored?["id"] as? String == "pricing" && stored?["stoppedAt"] != nil && stored?["shippedArm"] as? Int == 1, "\(listed.text)")
            let audit = try await http.send(.GET, "/v1/admin/apps/demo/audit", headers: admin)
            let actions = ((audit.json["entries"] as? [[String: Any]]) ?? []).compactMap { ($0["entry"] as? [String: Any])?["action"] as? String }
            #expect(
                actions.filter { $0.hasPrefix("experiment_") } == ["experiment_created", "experiment_stopped", "experiment_shipped"], "\(audit.text)")
        }
    }
}
