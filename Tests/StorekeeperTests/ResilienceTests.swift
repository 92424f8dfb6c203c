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

    @Test("Apple at 3-6 s: POST answers at once (202) and every receipt ends verified")
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
            var elapsed: [Double] = []
            for (i, receipt) in bodies.enumerated() {
                let started = ContinuousClock.now
                let reply = try await stack.api.postReceipt(appUserId: "slow-\(i)", receipt: receipt)
                let d = started.duration(to: .now)
                elapsed.append(Double(d.components.attoseconds) / 1e18 + Double(d.components.seconds))
                #expect(reply.status == 202)
                #expect(["pending", "verifying"].contains(reply.json["state"] as? String))
                ids.append(reply.json["id"] as! String)
            }
            // Apple takes at least 3 s; every POST returned long before (median under 100 ms).
            #expect(elapsed.sorted()[elapsed.count / 2] < 0.1, "POST latencies: \(elapsed)")
            #expect(elapsed.allSatisfy { $0 < 1.0 }, "POST latencies: \(elapsed)")
            for id in ids {
                let final = try await stack.api.waitForFinal(id, timeout: 40)
                #expect(final["state"] as? String == "verified")
            }
        }
    }

    @Test("an outage: verifications show retry scheduled with next time and reason, then all verify; none invalid")
    func outage() async throws {
        try await withStack { stack in
            let bodies = try await receipts(stack, count: 8)
            try await stack.simulator.outage(seconds: 3)
            var ids: [String] = []
            for (i, receipt) in bodies.enumerated() {
                let reply = try await stack.api.postReceipt(appUserId: "outage-\(i)", receipt: receipt)
                #expect(reply.status == 202)
                ids.append(reply.json["id"] as! String)
            }
            // Meanwhile: attempts and the next retry are visible.
            var sawRetry = false
            let deadline = Date().addingTimeInterval(2.5)
            while Date() < deadline, !sawRetry {
                let v = try await stack.api.verification(ids[0]).json
                if v["state"] as? String == "retry_scheduled" {
                    sawRetry = true
                    #expect(v["reason"] as? String == "apple_http_503")
                    #expect((v["attempts"] as? Int ?? 0) >= 1)
                    #expect(v["nextAttemptAt"] is String)
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(sawRetry)
            let metrics = try await stack.api.http.send(.GET, "/metrics")
            #expect(metrics.text.contains("storekeeper_verification_retries_total{reason=\"apple_http_503\"}"))
            for id in ids {
                let final = try await stack.api.waitForFinal(id, timeout: 30)
                #expect(final["state"] as? String == "verified")
                #expect((final["attempts"] as? Int ?? 0) >= 2)
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
                let final = try await stack.api.waitForFinal(id, timeout: 60)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
            #expect(try await stack.store.countTransactions(appId: "demo") == 12)
            let stats = try await stack.simulator.stats()
            #expect(stats.keys.contains { $0.contains("fault") }, "faults were injected: \(stats)")
        }
    }
}
