import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Apple down, then back (#15), over real HTTP against the simulator, on both backends: while
/// down only probes call Apple, waiting receipts spend no attempts, and Apple's return
/// releases them all at once.
@Suite("Apple outages: health, probes and release")
struct AppleOutageTests {
    @Test(
        "an outage: calls stop after a few failures, one probe at a time; on return every waiting receipt verifies, none invalid",
        arguments: WebhookTests.backends)
    func outageAndReturn(backend: String) async throws {
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "outage") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
            // One worker: calls to Apple are sequential, so the count at the simulator is the
            // state machine's doing, not a race between workers.
            configuration.workers = 1
            configuration.appleHealth.degradedAfterFailures = 2
            configuration.appleHealth.downAfterFailures = 3
            configuration.appleHealth.probeBaseSeconds = 1
            configuration.appleHealth.probeCapSeconds = 2
        }) { stack in
            let api = stack.api
            var bodies: [String] = []
            for _ in 0..<40 {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                bodies.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
            }
            try await stack.simulator.outage(seconds: 3600)
            let before = try await stack.simulator.stats()["sandbox.outage", default: 0] + stack.simulator.stats()["production.outage", default: 0]
            let started = Date()
            var ids: [String] = []
            for (i, receipt) in bodies.enumerated() {
                let reply = try await api.postReceipt(appUserId: "down-\(i)", receipt: receipt)
                #expect(reply.status == 202, "\(reply.text)")
                ids.append(try #require(reply.json["id"] as? String))
            }
            // Every receipt has been looked at once (none still pending): failed, or told to wait
            // for the probe. Nothing is final while Apple is down.
            let allWaiting = try await eventually {
                try await stack.store.verificationCounts()[.pending] == nil
            }
            #expect(allWaiting)
            let during = try await stack.store.verificationCounts()
            #expect(during[.verified] == nil && during[.invalid] == nil, "\(during)")
            let health = try await api.adminGet("/v1/admin/apple-health")
            let endpoints = try #require(health.json["endpoints"] as? [[String: Any]])
            #expect(endpoints.contains { $0["state"] as? String == "down" }, "\(health.text)")
            let elapsed = Date().timeIntervalSince(started)
            let stats = try await stack.simulator.stats()
            let calls = stats["sandbox.outage", default: 0] + stats["production.outage", default: 0] - before
            // Without the state machine each receipt calls Apple (40+). With it: the failures
            // that made Apple down, then one probe per backoff step (at least 1 s apart), plus
            // the sandbox hop each call may take. A bound from the time it took, not a timing.
            let bound = 2 * (3 + Int(elapsed / 1) + 2)
            #expect(calls <= bound, "\(calls) calls to Apple in \(elapsed) s; at most \(bound) expected")
            #expect(calls < ids.count, "\(calls) calls for \(ids.count) receipts: no storm")

            // Apple returns: the next probe succeeds and releases everyone, without waiting out
            // their backoff (at most 2 s here); each verifies once.
            try await stack.simulator.setFaults(FaultConfiguration.none)
            var attempts = 0
            for id in ids {
                let final = try await api.waitForFinal(id, timeout: 120)
                #expect(final["state"] as? String == "verified", "\(final)")
                attempts += final["attempts"] as? Int ?? 0
            }
            // Waiting for the probe spends no attempt: every attempt counted is a call that
            // failed during the outage or the one that verified.
            #expect(attempts <= ids.count + calls, "\(attempts) attempts for \(ids.count) receipts and \(calls) failed calls")
            let counts = try await stack.store.verificationCounts()
            #expect(counts[.invalid] == nil && counts[.verified] == ids.count)
            #expect(try await stack.store.countTransactions(appId: "demo") == ids.count)
            let metrics = try await api.http.send(.GET, "/metrics").text
            #expect(
                metrics.contains(#"storekeeper_apple_health_transitions_total{endpoint="verify_receipt_production",from="down",to="healthy"} 1"#),
                "\(metrics)")
            #expect(metrics.contains(#"storekeeper_apple_health{endpoint="verify_receipt_production",state="healthy"} 1"#))
            // The app's backend is told once that Apple went, and once that it came back.
            let told = try await api.events("?types=apple_down,apple_recovered").map(\.event)
            #expect(told.map(\.type) == [.appleDown, .appleRecovered], "\(told)")
            #expect(told.allSatisfy { $0.appUserId == "storekeeper_apple" })
        }
    }
    @Test("a flapping Apple (down and up every second or so): nothing invalid, no storm of calls, everything final once it settles")
    func flapping() async throws {
        try await withStack(configure: { configuration in
            configuration.workers = 2
            configuration.appleHealth.degradedAfterFailures = 2
            configuration.appleHealth.downAfterFailures = 3
            configuration.appleHealth.probeBaseSeconds = 0.5
            configuration.appleHealth.probeCapSeconds = 2
            configuration.retry = .init(base: 0.5, cap: 4, jitter: 0.2)
        }) { stack in
            let api = stack.api
            var bodies: [String] = []
            for _ in 0..<30 {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                bodies.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
            }
            var ids: [String] = []
            let started = Date()
            // Five outages of 1.2 s, each followed by 1.2 s of Apple answering; receipts arrive throughout.
            for cycle in 0..<5 {
                try await stack.simulator.outage(seconds: 1.2)
                for i in 0..<6 {
                    let reply = try await api.postReceipt(appUserId: "flap-\(cycle)-\(i)", receipt: bodies[cycle * 6 + i])
                    #expect(reply.status == 202 || reply.status == 200, "\(reply.text)")
                    ids.append(try #require(reply.json["id"] as? String))
                }
                try await Task.sleep(for: .milliseconds(2_400))
            }
            let flapped = Date().timeIntervalSince(started)
            for id in ids {
                let final = try await api.waitForFinal(id, timeout: 120)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
            let counts = try await stack.store.verificationCounts()
            #expect(counts[.invalid] == nil && counts[.verified] == ids.count)
            #expect(try await stack.store.countTransactions(appId: "demo") == ids.count)
            // Calls that met an outage: per outage at most the failures that make Apple down
            // (plus one per other worker already calling) and one probe per backoff step.
            let failed = try await stack.simulator.stats()["production.outage", default: 0]
            let bound = 5 * (3 + 2) + Int(flapped / 0.5) + 5
            #expect(failed <= bound, "\(failed) failed calls in \(flapped) s; at most \(bound) expected")
        }
    }
}
