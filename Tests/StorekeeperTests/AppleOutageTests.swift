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
            // Time moves only when this test moves it: each bound below counts its steps.
            stack.clock.freeze()
            var bodies: [String] = []
            for _ in 0..<40 {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                bodies.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
            }
            try await stack.simulator.outage(seconds: 3600)
            func calls() async throws -> Int {
                let stats = try await stack.simulator.stats()
                return stats["sandbox.outage", default: 0] + stats["production.outage", default: 0]
            }
            let before = try await calls()
            var ids: [String] = []
            for (i, receipt) in bodies.enumerated() {
                let reply = try await api.postReceipt(appUserId: "down-\(i)", receipt: receipt)
                #expect(reply.status == 202, "\(reply.text)")
                ids.append(try #require(reply.json["id"] as? String))
            }
            // Every receipt has been looked at once (none pending, none running, none due now):
            // failed, or told to wait for the probe. Nothing is final while Apple is down.
            #expect(try await stack.quiet())
            #expect(try await stack.store.verificationCounts()[.pending] == nil)
            let during = try await stack.store.verificationCounts()
            #expect(during[.verified] == nil && during[.invalid] == nil, "\(during)")
            let health = try await api.adminGet("/v1/admin/apple-health")
            let endpoints = try #require(health.json["endpoints"] as? [[String: Any]])
            #expect(endpoints.contains { $0["state"] as? String == "down" }, "\(health.text)")
            // Without the state machine each receipt calls Apple (40+). With it, and no time
            // passed: only the failures that made Apple down (each may have taken the sandbox hop).
            let downCalls = try await calls() - before
            #expect(downCalls <= 2 * 3, "\(downCalls) calls to Apple before any probe was due")
            // While Apple stays down, each probe step lets one probe call, whatever is waiting.
            var probing = downCalls
            // (A step of 3 s passes the next probe's time, at most the 2 s cap away, and the
            // instant the waiting were told to come back around it.)
            for step in 1...3 {
                stack.clock.advance(by: 3)
                #expect(try await stack.whenSettled { try await calls() - before > probing }, "step \(step): the probe calls")
                #expect(try await stack.quiet())
                let now = try await calls() - before
                #expect(now - probing <= 2, "step \(step): \(now - probing) calls; one probe (and its hop) expected")
                probing = now
            }
            let failedCalls = probing

            // Apple returns: the next probe succeeds and releases everyone at once (their own
            // backoff is not waited out); each verifies once.
            try await stack.simulator.setFaults(FaultConfiguration.none)
            stack.clock.advance(by: 3)
            #expect(
                try await stack.whenSettled {
                    let metrics = try await api.http.send(.GET, "/metrics").text
                    return metrics.contains(#"storekeeper_apple_health{endpoint="verify_receipt_production",state="healthy"} 1"#)
                }, "the probe after the return finds Apple healthy")
            // The release is paced (`releasePerSecond`, 50 by default): 40 are all due within a second.
            stack.clock.advance(by: 1)
            var attempts = 0
            for id in ids {
                let final = try await api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
                attempts += final["attempts"] as? Int ?? 0
            }
            let calls = failedCalls
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
    @Test(
        "SQLite, one process: a 60 s outage in phases (connections refused, 503 outage, HTTP 503, HTML 200, 21005, hangs) with 500 receipts; calls bounded, nothing invalid, all verify once on return"
    )
    func scriptedOutage() async throws {
        try await withStack(
            secondsPerMonth: 86_400,
            configure: { configuration in
                configuration.workers = 8
                configuration.attemptTimeoutSeconds = 5
                configuration.appleHealth.degradedAfterFailures = 2
                configuration.appleHealth.downAfterFailures = 3
                configuration.appleHealth.probeBaseSeconds = 0.5
                configuration.appleHealth.probeCapSeconds = 3
                configuration.appleHealth.releasePerSecond = 50
                // A failed call's own retry is 10 minutes away: what verifies sooner was released.
                configuration.retry = .init(base: 600, cap: 600, jitter: 0)
            }, throughGateway: true
        ) { stack in
            let api = stack.api
            let gateway = try #require(stack.gateway)
            let receiptCount = 500
            var bodies: [String] = []
            for _ in 0..<receiptCount {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                bodies.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
            }
            // Six phases of 10 s; every call fails, each phase in another of Apple's ways: first
            // nothing listens (connections refused), then the simulator answers with faults.
            let phases: [(inout FaultConfiguration) -> Void] = [
                { _ in }, { $0.outages = [.init(start: .distantPast, end: .distantFuture)] }, { $0.http503Rate = 1 }, { $0.html200Rate = 1 },
                { $0.status21005Rate = 1 },
                {
                    $0.hangRate = 1
                    $0.hangSeconds = 3
                },
            ]
            // Time moves only when this test moves it: each phase is ten steps of one second,
            // each taken once no verification has anything left to do at the current instant.
            stack.clock.freeze()
            let stepsPerPhase = 10
            var ids: [String] = []
            for (index, phase) in phases.enumerated() {
                var faults = FaultConfiguration()
                phase(&faults)
                try await stack.simulator.setFaults(faults)
                if index == 1 {
                    // The refused phase ends: its failed calls failed as what they were. Counted per
                    // attempt: a verification's own reason is its latest attempt's, and one that
                    // waited for the probe after it failed (at a jittered time) no longer says so.
                    let metrics = try await api.http.send(.GET, "/metrics").text
                    #expect(
                        metrics.contains(#"storekeeper_verification_retries_total{reason="apple_unreachable"}"#),
                        "refused connections fail as apple_unreachable")
                }
                if index == 0 { await gateway.refuse() } else { try await gateway.accept() }
                for i in (index * receiptCount / phases.count)..<((index + 1) * receiptCount / phases.count) {
                    let reply = try await api.postReceipt(appUserId: "phase-\(i)", receipt: bodies[i])
                    #expect(reply.status == 202, "\(reply.text)")
                    ids.append(try #require(reply.json["id"] as? String))
                }
                for _ in 0..<stepsPerPhase {
                    #expect(try await stack.quiet(), "phase \(index): every receipt looked at")
                    stack.clock.advance(by: 1)
                }
            }
            #expect(try await stack.quiet(), "every receipt was looked at during the outage")
            let calls = try await stack.simulator.stats().filter { $0.key.hasPrefix("production.outage") || $0.key.hasPrefix("production.fault.") }
                .values.reduce(0, +)
            // The failures that make Apple down, what the 8 workers had in flight then, and at
            // most one probe per step (a probe that fails puts the next at least 0.5 s later, and
            // time moves only between steps).
            let bound = 3 + 8 + phases.count * stepsPerPhase + 2
            #expect(calls <= bound, "\(calls) calls to Apple in \(phases.count * stepsPerPhase) steps; at most \(bound) expected")
            #expect(calls < receiptCount / 2, "\(calls) calls for \(receiptCount) receipts: no storm")
            let during = try await stack.store.verificationCounts()
            #expect(during[.verified] == nil && during[.invalid] == nil, "nothing final while Apple is down: \(during)")

            // Apple returns. The released verifications are paced at 50 a second; each failed
            // call's own retry is 600 s away, so what is final before the clock gets there was
            // released.
            try await stack.simulator.setFaults(FaultConfiguration.none)
            // No failed call's own retry comes before this instant of the clock.
            let ownRetries = stack.clock.now().addingTimeInterval(600)
            func unsettled() async throws -> Bool { try await stack.store.verificationCounts().keys.contains { !$0.isFinal } }
            while try await unsettled(), stack.clock.now().addingTimeInterval(1) < ownRetries {
                #expect(try await stack.quiet())
                stack.clock.advance(by: 1)
            }
            #expect(try await !unsettled(), "all final before any failed call's own retry was due: the recovery released them")
            let counts = try await stack.store.verificationCounts()
            #expect(counts[.verified] == receiptCount && counts[.invalid] == nil, "\(counts)")
            #expect(try await stack.store.countTransactions(appId: "demo") == receiptCount, "each granted once")
            let told = try await api.events("?types=apple_down,apple_recovered").map(\.event.type)
            #expect(told == [.appleDown, .appleRecovered], "\(told)")
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
            // Time moves only when this test moves it: five outages of 1.2 s, each followed by
            // 1.2 s of Apple answering, with six receipts posted during each outage.
            stack.clock.freeze()
            var ids: [String] = []
            for cycle in 0..<5 {
                try await stack.simulator.outage(seconds: 1.2)
                for i in 0..<6 {
                    let reply = try await api.postReceipt(appUserId: "flap-\(cycle)-\(i)", receipt: bodies[cycle * 6 + i])
                    #expect(reply.status == 202 || reply.status == 200, "\(reply.text)")
                    ids.append(try #require(reply.json["id"] as? String))
                }
                #expect(try await stack.quiet(), "cycle \(cycle): every receipt looked at")
                stack.clock.advance(by: 2.4)
            }
            // Apple stays up now: each step passes the longest retry (4 s) until all are final.
            var steps = 0
            while try await stack.store.verificationCounts().keys.contains(where: { !$0.isFinal }), steps < 20 {
                #expect(try await stack.quiet())
                stack.clock.advance(by: 4)
                steps += 1
            }
            for id in ids {
                let final = try await api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
            let failed = try await stack.simulator.stats()["production.outage", default: 0]
            let counts = try await stack.store.verificationCounts()
            #expect(counts[.invalid] == nil && counts[.verified] == ids.count)
            #expect(try await stack.store.countTransactions(appId: "demo") == ids.count)
            // Calls that met an outage: per outage at most the failures that make Apple down and
            // one per other worker already calling (no time passes while Apple is down, so no probe
            // meets it).
            #expect(failed > 0, "the receipts met Apple's outages")
            #expect(failed <= 5 * (3 + 1), "\(failed) failed calls in 5 outages")
        }
    }
}
