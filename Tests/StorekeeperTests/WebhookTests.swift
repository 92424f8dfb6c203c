import AppStoreSimulator
import Crypto
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Webhooks over real HTTP: a receiver in this process that can be told to fail, and the
/// server's admin API to manage endpoints and dead letters.
@Suite("webhooks")
struct WebhookTests {
    /// A schedule short enough to run out within a test: retries 0.2 s apart, dead after 2 s.
    static func configure(_ configuration: inout StorekeeperConfiguration) {
        configuration.webhooks.retrySchedule = WebhookRetrySchedule(delays: [0.2], maximumAge: 2, jitter: 0)
        // Long enough that a busy machine's receiver still answers within it: an attempt that
        // times out after the receiver took the event is retried, which a test would see as a
        // second delivery (or a later 410 that pauses the endpoint) that no receiver caused.
        configuration.webhooks.timeoutSeconds = 10
        configuration.webhooks.heldRecheckSeconds = 0.5
    }

    func admin(_ api: StorekeeperClient) -> [String: String] { ["Authorization": "Bearer \(api.adminKey)"] }

    func createEndpoint(_ api: StorekeeperClient, url: String, extra: String = "") async throws -> (id: String, secret: String) {
        let reply = try await api.http.send(
            .POST, "/v1/admin/apps/demo/webhooks", headers: admin(api), body: Data(#"{"url":"\#(url)"\#(extra)}"#.utf8))
        #expect(reply.status == 201, "\(reply.text)")
        let endpoint = try #require(reply.json["endpoint"] as? [String: Any])
        return (try #require(endpoint["id"] as? String), try #require(reply.json["secret"] as? String))
    }

    /// Standard Webhooks' signature, computed here from the specification.
    func verify(_ received: WebhookReceiver.Received, secret: String) -> Bool {
        guard let key = Data(base64Encoded: String(secret.dropFirst("whsec_".count))) else { return false }
        let signed = Data("\(received.id).\(received.timestamp).".utf8) + received.body
        let expected = "v1," + Data(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))).base64EncodedString()
        return received.signature.split(separator: " ").contains { $0 == expected }
    }

    /// PostgreSQL too whenever the suite has a server (always in CI).
    static var backends: [String] { PostgresTestDatabase.url != nil || PostgresTestDatabase.required ? ["sqlite", "postgresql"] : ["sqlite"] }

    @Test(
        "events are delivered signed, in order per subscriber; failures retry; a receiver that never recovers is dead-lettered and replayed",
        arguments: backends)
    func deliveries(backend: String) async throws {
        let receiver = try await WebhookReceiver.start()
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "webhooks") : nil
        do {
            try await run(receiver, database: database)
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    func run(_ receiver: WebhookReceiver, database: String?) async throws {
        try await withStack(configure: { configuration in
            Self.configure(&configuration)
            if let database { configuration.databasePath = database }
        }) { stack in
            let api = stack.api
            let (endpointId, secret) = try await createEndpoint(api, url: receiver.url)
            #expect(secret.hasPrefix("whsec_"))
            let listed = try await api.http.send(.GET, "/v1/admin/apps/demo/webhooks", headers: admin(api))
            #expect(listed.status == 200 && !listed.text.contains(secret), "a secret is shown once")

            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let unlock = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(try await api.postReceipt(appUserId: "grace", receipt: unlock.receipt, wait: TestWait.seconds).status == 200)
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(try await api.postReceipt(appUserId: "grace", receipt: coins.receipt, wait: TestWait.seconds).status == 200)
            // The unlock grants the demo's entitlement no_ads: an event of its own, after the purchase's.
            #expect(await receiver.receivedAtLeast(3))
            let first = receiver.received
            #expect(first.map { $0.json["type"] as? String } == ["non_consumable_purchase", "entitlement_granted", "consumable_purchase"])
            #expect(first.map { $0.json["sequence"] as? Int } == [1, 2, 3], "in order per subscriber")
            #expect(first.allSatisfy { verify($0, secret: secret) && $0.id == $0.json["id"] as? String })
            #expect(first.allSatisfy { !String(decoding: $0.body, as: UTF8.self).contains(secret) })
            Self.capture(first, secret: secret)

            // From here time moves only when this test moves it: a retry comes due, and a delivery
            // ages past the schedule, at the test's word, however slow the machine.
            stack.clock.freeze()

            // Down with Retry-After, then up: retried, then delivered once.
            receiver.behave(.fail(status: 503, retryAfter: "0"))
            let more = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(try await api.postReceipt(appUserId: "grace", receipt: more.receipt, wait: TestWait.seconds).status == 200)
            #expect(
                try await stack.whenSettled {
                    let pending = try await api.http.send(
                        .GET, "/v1/admin/apps/demo/webhooks/\(endpointId)/deliveries?state=pending", headers: admin(api))
                    let deliveries = pending.json["deliveries"] as? [[String: Any]] ?? []
                    return deliveries.contains { ($0["attempts"] as? [Any])?.isEmpty == false }
                })
            receiver.behave(.accept)
            // Past the retry's 0.2 s, well inside the schedule's 2 s.
            stack.clock.advance(by: 0.5)
            #expect(await receiver.receivedAtLeast(4))
            #expect(receiver.received.last?.json["transactionId"] as? String == more.transactionId)

            // Never recovers: dead after the schedule's two seconds, the endpoint paused.
            receiver.behave(.fail(status: 500))
            let last = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(try await api.postReceipt(appUserId: "grace", receipt: last.receipt, wait: TestWait.seconds).status == 200)
            var dead: [[String: Any]] = []
            // Each step lets every due attempt run, then moves past the next retry: the delivery
            // is dead once an attempt fails 2 s after the first.
            for _ in 0..<12 {
                let reply = try await api.http.send(
                    .GET, "/v1/admin/apps/demo/webhooks/\(endpointId)/deliveries?state=dead", headers: admin(api))
                dead = reply.json["deliveries"] as? [[String: Any]] ?? []
                if !dead.isEmpty { break }
                #expect(try await stack.quiet())
                stack.clock.advance(by: 0.5)
            }
            #expect(dead.count == 1, "\(dead)")
            // The endpoint's list a page at a time: following `nextCursor` reads each delivery once.
            let base = "/v1/admin/apps/demo/webhooks/\(endpointId)/deliveries"
            func ids(_ reply: HTTPJSONClient.Reply) -> [String] {
                (reply.json["deliveries"] as? [[String: Any]] ?? []).compactMap { ($0["delivery"] as? [String: Any])?["id"] as? String }
            }
            let everything = ids(try await api.http.send(.GET, base, headers: admin(api)))
            var paged: [String] = []
            var cursor: String?
            repeat {
                let page = try await api.http.send(.GET, base + "?limit=1" + (cursor.map { "&before=\($0)" } ?? ""), headers: admin(api))
                paged += ids(page)
                cursor = page.json["nextCursor"] as? String
            } while cursor != nil && paged.count <= everything.count
            #expect(everything.count >= 3 && paged == everything, "\(paged) against \(everything)")
            #expect(try await api.http.send(.GET, base + "?before=x", headers: admin(api)).status == 400)
            let attempts = dead.first?["attempts"] as? [[String: Any]] ?? []
            // Each attempt failed: the receiver's 500, or (on a busy machine) no answer within the
            // endpoint's timeout; never a success.
            #expect(
                attempts.count >= 2 && attempts.allSatisfy { ($0["status"] as? Int).map { $0 == 500 } ?? ($0["error"] != nil) }
                    && attempts.contains { $0["status"] as? Int == 500 }, "\(attempts)")
            let endpoint = try await api.http.send(.GET, "/v1/admin/apps/demo/webhooks/\(endpointId)", headers: admin(api))
            #expect(endpoint.json["state"] as? String == "paused" && endpoint.json["pausedReason"] as? String == "deliveries_failing")

            // Fixed: resume and replay; the dead delivery arrives, once.
            receiver.behave(.accept)
            let resumed = try await api.http.send(
                .PATCH, "/v1/admin/apps/demo/webhooks/\(endpointId)", headers: admin(api), body: Data(#"{"state":"active"}"#.utf8))
            #expect(resumed.status == 200 && resumed.json["state"] as? String == "active")
            let replay = try await api.http.send(.POST, "/v1/admin/apps/demo/webhooks/\(endpointId)/replay", headers: admin(api))
            #expect(replay.status == 202 && replay.json["replayed"] as? Int == 1)
            #expect(try await stack.whenSettled { receiver.received.contains { $0.json["transactionId"] as? String == last.transactionId } })
            let ids = receiver.received.map(\.id)
            #expect(Set(ids).count == ids.count, "each event delivered once to the accepting receiver")

            // A test event goes to this endpoint only.
            let test = try await api.http.send(.POST, "/v1/admin/apps/demo/webhooks/\(endpointId)/test", headers: admin(api))
            #expect(test.status == 202)
            #expect(try await stack.whenSettled { receiver.received.contains { $0.json["type"] as? String == "test" } })

            // Its series are on `/metrics` while it exists; deleted, its id is named nowhere there.
            let series = "storekeeper_webhook_deliveries_total{endpoint=\"\(endpointId)\",outcome=\"delivered\"}"
            #expect(try await api.http.send(.GET, "/metrics").text.contains(series))
            let deleted = try await api.http.send(.DELETE, "/v1/admin/apps/demo/webhooks/\(endpointId)", headers: admin(api))
            #expect(deleted.status == 204)
            #expect(!(try await api.http.send(.GET, "/metrics").text.contains(endpointId)))
        }
    }

    @Test("bad input to the webhook admin API is a 4xx with a stable code")
    func badInput() async throws {
        try await withStack { stack in
            let api = stack.api
            for (body, code) in [
                (#"{"url":"ftp://example.com/hook"}"#, "invalid_webhook"), (#"{"url":"not a url"}"#, "invalid_webhook"),
                (#"{}"#, "invalid_webhook"), (#"{"url":"https://user:pw@example.com/"}"#, "invalid_webhook"),
                (#"{"url":"https://example.com/","eventTypes":["bogus"]}"#, "unknown_event_type"),
                (#"{"url":"https://example.com/","environments":["xcode"]}"#, "invalid_webhook"), ("{", "invalid_json"),
            ] {
                let reply = try await api.http.send(.POST, "/v1/admin/apps/demo/webhooks", headers: admin(api), body: Data(body.utf8))
                #expect(reply.status == 400 && reply.errorCode == code, "\(body): \(reply.text)")
            }
            #expect(try await api.http.send(.GET, "/v1/admin/apps/demo/webhooks/whep_nope", headers: admin(api)).status == 404)
            #expect(try await api.http.send(.GET, "/v1/admin/apps/demo/webhooks").status == 401)
            let (id, secret) = try await createEndpoint(api, url: "https://example.com/hook", extra: #","eventTypes":["refund"]"#)
            let rotated = try await api.http.send(.POST, "/v1/admin/apps/demo/webhooks/\(id)/rotate-secret", headers: admin(api))
            let newSecret = try #require(rotated.json["secret"] as? String)
            #expect(newSecret != secret && (rotated.json["endpoint"] as? [String: Any])?["previousSecretExpiresAt"] != nil)
            #expect(try await api.http.send(.DELETE, "/v1/admin/apps/demo/webhooks/\(id)", headers: admin(api)).status == 204)
            #expect(try await api.http.send(.DELETE, "/v1/admin/apps/demo/webhooks/\(id)", headers: admin(api)).status == 404)

            // A misspelled filter is an error naming it, not an endpoint that receives everything.
            let misspelled = try await api.http.send(
                .POST, "/v1/admin/apps/demo/webhooks", headers: admin(api),
                body: Data(#"{"url":"https://example.com/hook","eventType":["refund"]}"#.utf8))
            #expect(misspelled.status == 400 && misspelled.errorCode == "invalid_webhook" && misspelled.text.contains("eventType"))

            // A secret is returned as it is: `/` never escaped (a copied `\/` fails every signature).
            var sawSlash = false
            for _ in 0..<24 where !sawSlash {
                let created = try await api.http.send(
                    .POST, "/v1/admin/apps/demo/webhooks", headers: admin(api), body: Data(#"{"url":"https://example.com/hook"}"#.utf8))
                let secret = try #require(created.json["secret"] as? String)
                #expect(!created.text.contains("\\/") && created.text.contains("\"\(secret)\""), "\(created.text)")
                sawSlash = secret.contains("/")
                let endpointId = (created.json["endpoint"] as? [String: Any])?["id"] as? String ?? ""
                // Test events go to the endpoint tested; the app's feed shows them only when asked.
                #expect(try await api.http.send(.POST, "/v1/admin/apps/demo/webhooks/\(endpointId)/test", headers: admin(api)).status == 202)
                _ = try await api.http.send(.DELETE, "/v1/admin/apps/demo/webhooks/\(endpointId)", headers: admin(api))
            }
            #expect(sawSlash, "some secret had a '/' to escape")
            let app = ["Authorization": "Bearer \(api.apiKey)"]
            let feed = try await api.http.send(.GET, "/v1/events?limit=500", headers: app)
            #expect(feed.status == 200 && !feed.text.contains(#""type":"test""#), "\(feed.text.prefix(300))")
            let asked = try await api.http.send(.GET, "/v1/events?types=test", headers: app)
            #expect(asked.text.contains(#""type":"test""#))
        }
    }

    /// For `scripts/webhooks.sh`: what was received, with the secret, so the Standard Webhooks
    /// reference library can check the signatures (a library nobody here wrote).
    static func capture(_ received: [WebhookReceiver.Received], secret: String) {
        guard let path = ProcessInfo.processInfo.environment["STOREKEEPER_WEBHOOK_CAPTURES"] else { return }
        let entries = received.map { item -> [String: String] in
            [
                "id": item.id, "timestamp": item.timestamp, "signature": item.signature,
                "body": String(decoding: item.body, as: UTF8.self), "secret": secret,
            ]
        }
        try? JSONSerialization.data(withJSONObject: entries).write(to: URL(fileURLWithPath: path))
    }
}
