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
/// workers, and worker processes without HTTP, one of them killed with SIGKILL mid-run. Runs
/// beside `ScaleOutOutageTests` (each spawns processes of its own on a schema of its own).
@Suite("scale-out on PostgreSQL with real processes", .enabled(if: PostgresTestDatabase.url != nil))
struct ScaleOutTests: ScaleOutHarness {
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
}
