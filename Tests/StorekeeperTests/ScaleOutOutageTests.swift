import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// Apple's outages and a worker killed while holding leases, met by real `storekeeper` worker
/// processes on PostgreSQL: one test at a time (each counts Apple's calls and events of its
/// own outage), beside the many-receipts test of `ScaleOutTests`.
@Suite("scale-out on PostgreSQL: outages and a killed worker", .serialized, .enabled(if: PostgresTestDatabase.url != nil))
struct ScaleOutOutageTests: ScaleOutHarness {
    @Test(
        "an outage (connections refused until Apple is held down, then 503s, HTML 200s, 21005s and hangs), 500 receipts, 2 worker processes: no storm, nothing invalid; on return all verify once"
    )
    func outageWithTwoWorkers() async throws {
        let (stack, _, configPath, directory, binary) = try await prepare(
            name: "outage2", workers: 8, attemptTimeout: 20, lease: 61, latency: 0...0,
            configure: {
                $0.appleHealth.degradedAfterFailures = 2
                $0.appleHealth.downAfterFailures = 3
                $0.appleHealth.probeBaseSeconds = 0.5
                $0.appleHealth.probeCapSeconds = 3
                $0.appleHealth.releasePerSecond = 50
                // A failed call's own retry comes 10 minutes later: what verifies sooner after
                // Apple's return was released by the recovery, not by its backoff.
                $0.retry = RetryPolicy(base: 600, cap: 600, jitter: 0)
            }, throughGateway: true)
        let gateway = try #require(stack.gateway)
        let receiptCount = 500
        let receipts = try await inLanes(0..<receiptCount) { _ in
            let device = try await stack.simulator.createDevice(bundleId: DemoConfiguration.bundleId, environment: "production")
            return try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt
        }
        // Until a worker process holds Apple down, nothing listens where the workers call it
        // (connections refused); then every call fails in one of Apple's other ways (a hang
        // answers 503 after 2 s).
        await gateway.refuse()
        var faults = FaultConfiguration()
        faults.status21005Rate = 0.25
        faults.http503Rate = 0.25
        faults.html200Rate = 0.25
        faults.hangRate = 0.25
        faults.hangSeconds = 2
        try await stack.simulator.setFaults(faults)
        let log = { (name: String) in directory.appendingPathComponent("\(name).log").path }
        let api = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: log("api"), extra: ["--no-workers"])
        let workers = [
            try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-1")),
            try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-2")),
        ]
        defer { ([api] + workers).forEach { $0.terminate() } }
        func told() async throws -> [EventType] {
            try await stack.store.events(appId: "demo", after: 0, types: [.appleDown, .appleRecovered], limit: 100).map(\.event.type)
        }
        // A fifth posted while connections are refused; the rest once Apple is held down.
        let apiURL = api.baseURL
        func post(_ indexes: Range<Int>) async throws {
            let statuses = try await inLanes(indexes) { i in
                try await client(stack, apiURL).postReceipt(appUserId: "down-\(i)", receipt: receipts[i], wait: 0).status
            }
            #expect(statuses.allSatisfy { $0 == 202 }, "\(statuses.filter { $0 != 202 })")
        }
        try await post(0..<receiptCount / 5)
        #expect(try await eventually { try await told() == [.appleDown] }, "refused connections hold Apple down")
        try await gateway.accept()
        try await post(receiptCount / 5..<receiptCount)
        // Each receipt has been looked at (none is still pending): it failed, or waits for a probe
        // without calling. (Not "all retry_scheduled at one instant": the waiting are leased and
        // sent back all the time, so some are always being looked at.)
        _ = try await eventually(every: .milliseconds(100)) { try await stack.store.verificationCounts()[.pending] == nil }
        let during = try await stack.store.verificationCounts()
        #expect(during[.pending] == nil && during[.verified] == nil && during[.invalid] == nil, "\(during)")
        // No storm, whatever the machine's speed: without the health gate each of the 500
        // receipts would have called Apple at least once by now. With it, each process makes the
        // failures that hold Apple down and what its 8 workers had in flight, then one probe at
        // a time, 0.5 s apart and 3 s once backed off: within this wait's 300 s and the posting,
        // far fewer. (The per-process bound itself is asserted on a frozen clock, in process, by
        // `AppleOutageTests.outageAndReturn`: these worker processes read the wall clock.)
        let calls = try await stack.simulator.stats().filter { $0.key.hasPrefix("production.fault.") }.values.reduce(0, +)
        #expect(calls < receiptCount, "\(calls) calls for \(receiptCount) receipts: no storm")
        #expect(try await stack.store.verificationCounts()[.invalid] == nil, "nothing invalid during the outage")

        // Apple returns: one process's probe finds out, releases the waiting at 50 a second and
        // records it; the other adopts it. Every receipt verifies, long before its own retry.
        // (The calls that failed are due again only after 10 minutes: all final within this
        // 5-minute deadline means the release brought them.)
        try await stack.simulator.setFaults(.none)
        var counts: [VerificationState: Int] = [:]
        _ = try await eventually(every: .milliseconds(100)) {
            counts = try await stack.store.verificationCounts()
            return (counts[.verified] ?? 0) + (counts[.invalid] ?? 0) == receiptCount
        }
        #expect(counts[.verified] == receiptCount && counts[.invalid] == nil, "\(counts)")
        try await expectBooksBalance(stack)
        // Both worker processes saw Apple go and come back; the app's backend heard each change
        // once: down, then recovered. (A machine busy enough to time out calls after the return
        // may see Apple go again: then down and recovered again, never one told twice in a row.)
        let heard = try await told()
        #expect(heard.count >= 2 && heard.count % 2 == 0, "\(heard)")
        #expect(heard.enumerated().allSatisfy { $0.element == ($0.offset % 2 == 0 ? .appleDown : .appleRecovered) }, "\(heard)")
        let events = try await stack.store.events(appId: "demo", after: 0, types: [.appleDown, .appleRecovered], limit: 100).map(\.event)
        #expect(events.allSatisfy { $0.details?.appleEndpoint == "verify_receipt_production" && $0.environment == "production" })
        try await stack.stop()
    }

    @Test(
        "a flapping Apple (five outages of 1.2 s, each over once its receipts verify), 2 worker processes: nothing invalid, calls bounded, all verify once"
    )
    func flappingWithTwoWorkers() async throws {
        let workers = 4
        let (stack, _, configPath, directory, binary) = try await prepare(
            name: "flap2", workers: workers, attemptTimeout: 5, lease: 16, latency: 0...0,
            configure: {
                $0.appleHealth.degradedAfterFailures = 2
                $0.appleHealth.downAfterFailures = 3
                $0.appleHealth.probeBaseSeconds = 0.5
                $0.appleHealth.probeCapSeconds = 2
                $0.retry = RetryPolicy(base: 0.5, cap: 4, jitter: 0.2)
            })
        var receipts: [String] = []
        for _ in 0..<30 {
            let device = try await stack.simulator.createDevice(bundleId: DemoConfiguration.bundleId, environment: "production")
            receipts.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
        }
        let log = { (name: String) in directory.appendingPathComponent("\(name).log").path }
        let api = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: log("api"), extra: ["--no-workers"])
        let processes = [
            try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-1")),
            try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-2")),
        ]
        defer { ([api] + processes).forEach { $0.terminate() } }
        let (ids, failed) = try await Self.flap(stack.simulator, client(stack, api.baseURL), receipts: receipts)
        let counts = try await stack.store.verificationCounts()
        #expect(counts[.invalid] == nil && counts[.verified] == ids.count, "\(counts)")
        try await expectBooksBalance(stack)
        // Per process and outage: the failures that make Apple down, what its workers had in
        // flight then, and the probes that fit in the outage's fixed 1.2 s (0.5 s apart at
        // least). The bound comes from the outage's configured length, not from how long the
        // test took: a slower machine makes fewer calls in it, never more.
        let probesPerOutage = Int((Self.outageSeconds / 0.5).rounded(.up)) + 1
        let bound = 2 * 5 * (3 + workers + probesPerOutage)
        #expect(failed > 0, "the workers met Apple's outages")
        #expect(failed <= bound, "\(failed) failed calls in 5 outages of \(Self.outageSeconds) s from 2 processes; at most \(bound) expected")
        try await stack.stop()
    }

    @Test("a worker killed while holding leases: its successor releases them at once (the holder is provably gone); each completes once")
    func leasesOfKilledWorker() async throws {
        // Long enough that waiting for expiry would miss the deadline below by far.
        let lease = 900.0
        // Attempts may take 30 s: longer than Apple is made to stall below, so the doomed worker's
        // calls neither finish nor time out before it is killed, however slow the machine.
        var (stack, simulator, configPath, directory, binary) = try await prepare(
            name: "rescue", workers: 100, attemptTimeout: 30, lease: lease, latency: 2000...3000)
        simulator.faults.latencyMinMs = 0
        var receipts: [String] = []
        for i in 0..<40 {
            let device = try await stack.simulator.createDevice(bundleId: DemoConfiguration.bundleId, environment: "production")
            receipts.append(
                try await stack.simulator.purchase(device: device, productId: i % 2 == 0 ? "com.example.coins100" : "com.example.removeads").receipt)
        }
        try await stack.simulator.setFaults(
            {
                var f = FaultConfiguration.none
                f.latencyMinMs = 20_000
                f.latencyMaxMs = 20_000
                return f
            }())
        let api = try await ChildProcess.server(
            binary: binary, configPath: configPath, logPath: directory.appendingPathComponent("api.log").path, extra: ["--no-workers"])
        defer { api.terminate() }
        let postedAt = Date()
        for (i, receipt) in receipts.enumerated() {
            #expect(try await client(stack, api.baseURL).postReceipt(appUserId: "user-\(i)", receipt: receipt, wait: 0).status == 202)
        }
        let workerLog = directory.appendingPathComponent("worker.log").path
        let doomed = try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: workerLog)
        // Every job leased by this worker and waiting on Apple (20 s): kill it now.
        _ = try await eventually(every: .milliseconds(10)) { try await stack.store.verificationCounts()[.verifying] == 40 }
        doomed.killNine()
        let leasedBefore = Date()
        #expect(try await stack.store.verificationCounts()[.verifying] == 40, "all 40 leased by the killed worker")
        // Apple answers at once for the successor: its one attempt each cannot time out.
        try await stack.simulator.setFaults(FaultConfiguration.none)
        let successor = try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: workerLog)
        defer { successor.terminate() }

        _ = try await eventually(every: .milliseconds(100)) { (try await stack.store.verificationCounts()[.verified] ?? 0) == 40 }
        let done = try await stack.store.verifications(appId: "demo", states: [], createdBefore: nil, limit: 100)
        #expect(done.count == 40 && done.allSatisfy { $0.state == .verified }, "\(done.map(\.state))")
        // Leased once by the dead worker, once more by its successor, before any lease expired.
        #expect(done.allSatisfy { $0.attempts == 2 }, "\(done.map(\.attempts))")
        #expect(done.allSatisfy { ($0.finalizedAt ?? .distantFuture) < postedAt.addingTimeInterval(lease) })
        #expect(leasedBefore < postedAt.addingTimeInterval(lease), "the kill came before any lease could expire")
        let successorLog = (try? String(contentsOfFile: workerLog, encoding: .utf8)) ?? ""
        #expect(successorLog.contains("leases of a process that is gone released"), "\(successorLog.suffix(2000))")
        try await expectBooksBalance(stack)
        // SIGTERM is a graceful shutdown: the worker stops leasing, finishes, and exits cleanly.
        successor.terminate()
        #expect(successor.process.termination == .exited(0))
        try await stack.stop()
    }

    /// How long each of `flap`'s outages lasts, on the simulator's wall clock.
    static let outageSeconds = 1.2

    /// Worker processes of their own read the wall clock, so this flapping runs on it (the
    /// in-process `AppleOutageTests.flapping` runs on a frozen clock). Five outages of
    /// `outageSeconds`, with six of the 30 `receipts` posted in each; the next outage starts once
    /// those six are verified (Apple answered again and a probe found out). Returns the
    /// verification ids and how many calls to Apple met an outage.
    static func flap(
        _ simulator: SimulatorClient, _ api: StorekeeperClient, receipts: [String]
    ) async throws -> (ids: [String], failedCalls: Int) {
        var ids: [String] = []
        for cycle in 0..<5 {
            try await simulator.outage(seconds: outageSeconds)
            var posted: [String] = []
            for i in 0..<6 {
                let reply = try await api.postReceipt(appUserId: "flap-\(cycle)-\(i)", receipt: receipts[cycle * 6 + i])
                #expect(reply.status == 202 || reply.status == 200, "\(reply.text)")
                posted.append(try #require(reply.json["id"] as? String))
            }
            for id in posted {
                let final = try await api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
            ids += posted
        }
        return (ids, try await simulator.stats()["production.outage", default: 0])
    }
}
