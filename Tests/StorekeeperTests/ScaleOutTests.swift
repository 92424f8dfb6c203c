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

/// Several real `storekeeper` processes on one PostgreSQL database: API servers without
/// workers, and worker processes without HTTP, some of them killed with SIGKILL mid-run.
@Suite("scale-out on PostgreSQL with real processes", .serialized, .enabled(if: PostgresTestDatabase.url != nil))
struct ScaleOutTests {
    /// A fresh schema, the simulator in this process, and the child processes' configuration file.
    func prepare(
        name: String, workers: Int, attemptTimeout: Double, lease: Double, latency: ClosedRange<Int>,
        configure: (inout StorekeeperConfiguration) -> Void = { _ in }, throughGateway: Bool = false
    ) async throws -> (stack: LocalStack, simulator: SimulatorConfiguration, configPath: String, directory: URL, binary: String) {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = LocalStack.testConfiguration(databasePath: try PostgresTestDatabase.freshURL(prefix: name))
        configuration.workers = workers
        configuration.attemptTimeoutSeconds = attemptTimeout
        configuration.leaseSeconds = lease
        configuration.retry = RetryPolicy(base: 0.5, cap: 3, jitter: 0.3)
        configure(&configuration)
        // No renewals during the run: what was sold is fixed once the purchases are made.
        var simulator = LocalStack.simulatorConfiguration(for: configuration, secondsPerMonth: 86_400)
        simulator.faults = .none
        let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, startServer: false, throughGateway: throughGateway)
        simulator.faults.latencyMinMs = latency.lowerBound
        simulator.faults.latencyMaxMs = latency.upperBound
        var child = stack.configuration
        child.port = 0
        let configPath = directory.appendingPathComponent("config.json").path
        try JSONEncoder().encode(child).write(to: URL(fileURLWithPath: configPath))
        return (stack, simulator, configPath, directory, binary)
    }

    func client(_ stack: LocalStack, _ url: String) -> StorekeeperClient {
        StorekeeperClient(http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: url), apiKey: stack.api.apiKey, adminKey: stack.api.adminKey)
    }

    /// Checks the books: each transaction the simulator sold is granted once, and the ledger's
    /// purchases and their sum match the simulator's own record.
    func expectBooksBalance(_ stack: LocalStack) async throws {
        let sold = try await stack.simulator.soldTransactions()
        #expect(try await stack.store.countTransactions(appId: "demo") == sold.count, "each sold transaction granted exactly once")
        var purchases = 0
        var micros: Int64 = 0
        var ids = Set<String>()
        for environment in ["production", "sandbox"] {
            let entries = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: environment, from: .distantPast, to: .distantFuture))
            for entry in entries where entry.event == .purchase {
                purchases += 1
                micros += entry.priceMicros ?? 0
                ids.insert(entry.transactionId)
            }
        }
        let soldMicros = sold.compactMap { ($0["priceMicros"] as? NSNumber)?.int64Value }.reduce(0, +)
        #expect(purchases == sold.count && ids.count == sold.count, "one ledger purchase per sold transaction")
        #expect(micros == soldMicros, "ledger sums match what the simulator sold")
    }

    @Test("2 API + 2 worker processes, 3-6 s Apple with faults, ≥1,000 receipts, a worker SIGKILLed and restarted")
    func twoServersTwoWorkers() async throws {
        let (stack, simulator, configPath, directory, binary) = try await prepare(
            name: "scale", workers: 300, attemptTimeout: 10, lease: 31, latency: 3000...6000)
        // What 500 users buy: one product each, then 100 coins, so each has two receipts (the
        // second repeats the first purchase). Two thirds buy in production, a third in the sandbox
        // (whose receipts need two Apple calls: 21007, then the sandbox). Enough for hundreds of
        // verifications in flight at the kill; the throughput of thousands is
        // `storekeeper-bench scale`'s (docs/BENCHMARKS.md), not a test's.
        let products = ["com.example.coins100", "com.example.removeads", "com.example.pro.monthly", "com.example.season.pass"]
        let users = 500
        let bought = try await withThrowingTaskGroup(of: [(String, String, String)].self) { group in
            for lane in 0..<32 {
                group.addTask {
                    var out: [(String, String, String)] = []
                    for i in stride(from: lane, to: users, by: 32) {
                        let device = try await stack.simulator.createDevice(
                            bundleId: DemoConfiguration.bundleId, environment: i % 3 == 0 ? "sandbox" : "production")
                        let first = try await stack.simulator.purchase(device: device, productId: products[i % products.count])
                        let second = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                        out.append(("user-\(i)", first.receipt, second.receipt))
                    }
                    return out
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        var posts: [(user: String, receipt: String)] = bought.flatMap { [($0.0, $0.1), ($0.0, $0.2)] }
        posts += bought.prefix(100).map { ($0.0, $0.1) }  // the same user posts an old receipt again
        posts += bought.suffix(40).map { ("mallory-\($0.0)", $0.1) }  // another user replays someone's receipt
        posts.shuffle()
        let distinct = Set(posts.map { "\($0.user)|\($0.receipt)" }).count
        #expect(distinct >= 1_000)
        try await stack.simulator.setFaults(
            {
                var f = simulator.faults
                f.http503Rate = 0.02
                f.http500Rate = 0.01
                f.http429Rate = 0.01
                f.status21005Rate = 0.02
                return f
            }())

        let log = { (name: String) in directory.appendingPathComponent("\(name).log").path }
        let apis = [
            try await ChildProcess.server(binary: binary, configPath: configPath, logPath: log("api-1"), extra: ["--no-workers"]),
            try await ChildProcess.server(binary: binary, configPath: configPath, logPath: log("api-2"), extra: ["--no-workers"]),
        ]
        var workers = [
            try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-1")),
            try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-2")),
        ]
        defer { (apis + workers).forEach { $0.terminate() } }

        // Post everything through both API processes while the workers verify.
        let apiURLs = apis.map(\.baseURL)
        let toPost = posts
        let posting = Task {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for lane in 0..<48 {
                    group.addTask {
                        var unexpected = 0
                        for index in stride(from: lane, to: toPost.count, by: 48) {
                            let api = client(stack, apiURLs[index % 2])
                            // Answered at once (`wait=0`): the post is stored, the workers verify it.
                            let reply = try await api.postReceipt(appUserId: toPost[index].user, receipt: toPost[index].receipt, wait: 0)
                            if ![200, 202].contains(reply.status) { unexpected += 1 }
                        }
                        return unexpected
                    }
                }
                return try await group.reduce(0, +)
            }
        }

        // Kill one worker with SIGKILL once verifications are flowing, then start it again.
        func verified() async throws -> Int { try await stack.store.verificationCounts()[.verified] ?? 0 }
        #expect(try await eventually { try await verified() >= 200 }, "verifications flowing")
        let inFlightAtKill = try await stack.store.verificationCounts()[.verifying] ?? 0
        // `killNine` returns once the process is gone; its successor releases its leases at start.
        workers[0].killNine()
        workers[0] = try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log("worker-1"))
        #expect(try await posting.value == 0, "every post answered 200 or 202")

        var counts: [VerificationState: Int] = [:]
        _ = try await eventually(every: .milliseconds(250)) {
            counts = try await stack.store.verificationCounts()
            return (counts[.verified] ?? 0) + (counts[.invalid] ?? 0) == distinct
        }
        #expect(inFlightAtKill > 0, "the kill landed while verifications were in flight")
        #expect(counts.values.reduce(0, +) == distinct, "one verification per distinct receipt and user: \(counts)")
        #expect(counts[.verified] == distinct, "every receipt verified in the end: \(counts)")
        try await expectBooksBalance(stack)
        let all = try await stack.store.verifications(appId: "demo", states: [], createdBefore: nil, limit: 100_000)
        #expect(all.contains { $0.attempts > 1 }, "faults and the kill made some verifications run again")
        for api in apis { #expect(try await client(stack, api.baseURL).http.send(.GET, "/healthz").status == 200) }
        try await stack.stop()
    }

    @Test(
        "an outage (connections refused until Apple is held down, then 503s, HTML 200s, 21005s and hangs), 500 receipts, 2 worker processes: no storm, nothing invalid; on return all verify once"
    )
    func outageWithTwoWorkers() async throws {
        let (stack, _, configPath, directory, binary) = try await prepare(
            name: "outage2", workers: 8, attemptTimeout: 5, lease: 16, latency: 0...0,
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
        var receipts: [String] = []
        for _ in 0..<receiptCount {
            let device = try await stack.simulator.createDevice(bundleId: DemoConfiguration.bundleId, environment: "production")
            receipts.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt)
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
        for (i, receipt) in receipts.enumerated() {
            if i == receiptCount / 5 {
                #expect(try await eventually { try await told() == [.appleDown] }, "refused connections hold Apple down")
                try await gateway.accept()
            }
            #expect(try await client(stack, api.baseURL).postReceipt(appUserId: "down-\(i)", receipt: receipt, wait: 0).status == 202)
        }
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
        // Both worker processes saw Apple go and come back; the app's backend heard it once each.
        #expect(try await told() == [.appleDown, .appleRecovered])
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
