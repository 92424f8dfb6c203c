import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

@Suite("webhook delivery across kill -9", .serialized)
struct WebhookCrashTests {
    /// On SQLite the server is killed; on PostgreSQL the server and a worker process beside it,
    /// both while they hold deliveries, and only the server comes back.
    @Test(
        "kill -9 while events are being delivered: after restart each is delivered, none invented, in order per subscriber",
        arguments: WebhookTests.backends)
    func killNineWhileDelivering(backend: String) async throws {
        try await ChildStack.run("webhook-crash", backend: backend) {
            $0.workers = 16
            $0.attemptTimeoutSeconds = 2
            $0.leaseSeconds = 7
            $0.webhooks.timeoutSeconds = 2
            $0.webhooks.retrySchedule = WebhookRetrySchedule(delays: [0.5], maximumAge: 600, jitter: 0)
        } _: { child in
            let stack = child.stack
            let receiver = try await WebhookReceiver.start()
            var server = try await child.server()
            let worker = backend == "postgresql" ? try await child.worker() : nil
            func client() -> StorekeeperClient {
                StorekeeperClient(
                    http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL), apiKey: stack.api.apiKey,
                    adminKey: stack.api.adminKey)
            }
            let created = try await client().http.send(
                .POST, "/v1/admin/apps/demo/webhooks", headers: ["Authorization": "Bearer \(stack.api.adminKey)"],
                body: Data(#"{"url":"\#(receiver.url)"}"#.utf8))
            #expect(created.status == 201, "\(created.text)")

            // Eight subscribers, three purchases each: 40 events, sequences 1-5 per subscriber (the
            // three purchases, and the entitlements no_ads and pro they grant). The
            // receiver refuses them while they are bought, then answers slowly, so deliveries are in
            // flight when the server is killed.
            receiver.behave(.fail(status: 503))
            let products = ["com.example.removeads", "com.example.coins100", "com.example.season.pass"]
            for user in 0..<8 {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                for product in products {
                    let bought = try await stack.simulator.purchase(device: device, productId: product)
                    let reply = try await client().postReceipt(appUserId: "buyer-\(user)", receipt: bought.receipt, wait: TestWait.seconds)
                    #expect(reply.status == 200, "\(reply.text)")
                }
            }
            let events = try await stack.store.events(appId: "demo", after: 0, types: [], limit: 1_000).map(\.event)
            // The buyers' 40; on a busy machine Apple's calls may time out, and the app's own
            // apple_down and apple_recovered (app user storekeeper_apple) are events too, delivered alike.
            let bought = events.filter { $0.appUserId.hasPrefix("buyer-") }
            #expect(bought.count == 40, "\(bought.map(\.type))")
            #expect(
                events.allSatisfy { $0.appUserId.hasPrefix("buyer-") || [.appleDown, .appleRecovered].contains($0.type) }, "\(events.map(\.type))")
            receiver.behave(.slow(seconds: 1.5))
            #expect(await receiver.receivedAtLeast(3), "deliveries under way")
            server.killNine()
            worker?.killNine()
            let atKill = receiver.received.count
            #expect(atKill < 40, "the kill lands while deliveries are in flight (\(atKill) received)")

            receiver.behave(.accept)
            server = try await child.server()
            let allDelivered = try await eventually { (try await stack.store.deliveryCounts()[.delivered] ?? 0) == events.count }
            let counts = try await stack.store.deliveryCounts()
            #expect(allDelivered, "every event delivered after the restart: \(counts)")
            let received = receiver.received
            let known = Set(events.map(\.id))
            #expect(Set(received.map(\.id)) == known, "each event arrives, and only events that exist")
            for user in 0..<8 {
                let firstSeen = received.filter { $0.json["appUserId"] as? String == "buyer-\(user)" }.map { $0.json["sequence"] as? Int ?? 0 }
                var order: [Int] = []
                for sequence in firstSeen where !order.contains(sequence) { order.append(sequence) }
                #expect(order == [1, 2, 3, 4, 5], "buyer-\(user) first saw its events in order: \(firstSeen)")
            }
            server.terminate()
            await receiver.stop()
        }
    }
}
