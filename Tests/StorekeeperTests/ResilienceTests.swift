import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorageSQLite
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

@Suite("Apple slow, failing and down", .serialized)
struct ResilienceTests {
    /// Buys one consumable on a new device per receipt.
    func receipts(_ stack: LocalStack, count: Int) async throws -> [String] {
        var out: [String] = []
        for _ in 0..<count {
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            out.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
        }
        return out
    }

    @Test("Apple at 3-6 s: each POST answers 202, not final, before Apple could have answered; every receipt ends verified")
    func slowApple() async throws {
        try await withStack(configure: {
            $0.attemptTimeoutSeconds = 10; $0.leaseSeconds = 40
        }) { stack in
            let bodies = try await receipts(stack, count: 6)
            var faults = FaultConfiguration()
            faults.latencyMinMs = 3000
            faults.latencyMaxMs = 6000
            try await stack.simulator.setFaults(faults)
            var ids: [String] = []
            for (i, receipt) in bodies.enumerated() {
                let reply = try await stack.api.postReceipt(appUserId: "slow-\(i)", receipt: receipt)
                // Every Apple answer takes at least 3 s. An answer to the POST that is 202, not
                // final and carries no Apple status was made before Apple answered, whatever
                // the POST cost on this machine; a POST that waited for Apple would be 200.
                #expect(reply.status == 202, "\(reply.text)")
                #expect(["pending", "verifying"].contains(reply.json["state"] as? String), "\(reply.text)")
                #expect((reply.json["appleStatuses"] as? [Int])?.isEmpty == true, "no Apple answer yet: \(reply.text)")
                ids.append(try #require(reply.json["id"] as? String))
            }
            for id in ids {
                let final = try await stack.api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
        }
    }

    @Test("an outage: verifications show retry scheduled with next time and reason, then all verify; none invalid")
    func outage() async throws {
        try await withStack { stack in
            let bodies = try await receipts(stack, count: 8)
            // Apple stays down until the test brings it back, so what the outage shows does not
            // depend on how fast this machine gets to look.
            try await stack.simulator.outage(seconds: 3600)
            var ids: [String] = []
            for (i, receipt) in bodies.enumerated() {
                let reply = try await stack.api.postReceipt(appUserId: "outage-\(i)", receipt: receipt)
                #expect(reply.status == 202)
                ids.append(try #require(reply.json["id"] as? String))
            }
            // Meanwhile: every verification shows its failed attempt, the reason and the next retry.
            for id in ids {
                var seen: [String: Any] = [:]
                // While the clock runs, a retry (or Apple's probe) can be in flight when one read
                // lands: each round reads again once that has run.
                var retrying = false
                for _ in 0..<10 where !retrying {
                    retrying = try await stack.whenSettled {
                        seen = try await stack.api.verification(id).json
                        return seen["state"] as? String == "retry_scheduled"
                    }
                }
                #expect(retrying, "\(seen)")
                // Failed with Apple's 503, or, once Apple counts as down, waiting for its probe.
                #expect(["apple_http_503", "apple_down"].contains(seen["reason"] as? String), "\(seen)")
                #expect((seen["attempts"] as? Int ?? 0) >= 1)
                #expect(seen["nextAttemptAt"] is String)
            }
            // The counter is bumped just after the retry is stored: polled, not read once.
            #expect(
                try await stack.whenSettled {
                    try await stack.api.http.send(.GET, "/metrics").text.contains(
                        "storekeeper_verification_retries_total{reason=\"apple_http_503\"}")
                })
            // Apple is back: every receipt verifies (one that only waited for the probe spent no attempt).
            try await stack.simulator.setFaults(FaultConfiguration.none)
            for id in ids {
                let final = try await stack.api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
                #expect((final["attempts"] as? Int ?? 0) >= 1)
            }
            let counts = try await stack.store.verificationCounts()
            #expect(counts[.invalid] == nil && counts[.verified] == 8)
            #expect(try await stack.store.countTransactions(appId: "demo") == 8)
        }
    }

    @Test("a mix of 21005, HTTP 500/503/429, HTML bodies and hung connections: every receipt verifies once")
    func faultMix() async throws {
        try await withStack(configure: {
            $0.attemptTimeoutSeconds = 1; $0.leaseSeconds = 5
        }) { stack in
            let bodies = try await receipts(stack, count: 12)
            var faults = FaultConfiguration()
            faults.status21005Rate = 0.15
            faults.http500Rate = 0.1
            faults.http503Rate = 0.1
            faults.http429Rate = 0.1
            faults.html200Rate = 0.1
            faults.hangRate = 0.05
            faults.hangSeconds = 5
            try await stack.simulator.setFaults(faults)
            var ids: [String] = []
            for (i, receipt) in bodies.enumerated() {
                ids.append(try await stack.api.postReceipt(appUserId: "mix-\(i)", receipt: receipt).json["id"] as! String)
            }
            for id in ids {
                let final = try await stack.api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
            #expect(try await stack.store.countTransactions(appId: "demo") == 12)
            let stats = try await stack.simulator.stats()
            #expect(stats.keys.contains { $0.contains("fault") }, "faults were injected: \(stats)")
        }
    }
}
