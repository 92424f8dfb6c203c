import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import StorageSQLite
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

@Suite("crash recovery with the real binary", .serialized)
struct CrashRecoveryTests {
    @Test("kill -9 mid-verification, twice: after restarts nothing is lost and nothing is granted twice")
    func killNine() async throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var configuration = LocalStack.testConfiguration(databasePath: directory.appendingPathComponent("db.sqlite").path)
        configuration.sqliteSynchronousFull = true
        configuration.workers = 16
        configuration.attemptTimeoutSeconds = 2
        configuration.leaseSeconds = 7
        var simulatorConfiguration = LocalStack.simulatorConfiguration(for: configuration)
        simulatorConfiguration.faults.latencyMinMs = 400
        simulatorConfiguration.faults.latencyMaxMs = 1200
        let stack = try await LocalStack.start(configuration: configuration, simulator: simulatorConfiguration, startServer: false)

        var childConfiguration = stack.configuration
        childConfiguration.port = 0
        let configPath = directory.appendingPathComponent("config.json").path
        try JSONEncoder().encode(childConfiguration).write(to: URL(fileURLWithPath: configPath))
        let logPath = directory.appendingPathComponent("server.log").path

        // What users buy: 48 devices, each one product (consumables bought twice, so their second
        // receipt repeats the first transaction).
        let products = ["com.example.coins100", "com.example.removeads", "com.example.pro.monthly", "com.example.season.pass"]
        var posts: [(user: String, receipt: String)] = []
        var consumablesBought: [String: Int] = [:]
        for i in 0..<48 {
            let product = products[i % products.count]
            let user = "user-\(i)"
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: i % 3 == 0 ? "production" : "sandbox")
            let first = try await stack.simulator.purchase(device: device, productId: product)
            posts.append((user, first.receipt))
            if product == "com.example.coins100" {
                let second = try await stack.simulator.purchase(device: device, productId: product)
                posts.append((user, second.receipt))
                posts.append((user, first.receipt))  // a replay of the older receipt
                consumablesBought[user] = 2
            }
        }

        func client(_ server: ChildProcess) -> StorekeeperClient {
            StorekeeperClient(
                http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL), apiKey: stack.api.apiKey, adminKey: stack.api.adminKey)
        }
        func verifiedCount() async throws -> Int { try await stack.store.verificationCounts()[.verified] ?? 0 }

        // Run 1: post a few and let them verify; then Apple stalls (each answer takes five times
        // the attempt timeout, so no further verification can finish), the rest of the first half
        // is posted, and the server is killed while those are in flight. What is verified at the
        // kill is then fixed, however fast or slow the machine is.
        var server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
        let half = posts.count / 2
        let early = posts.prefix(6)
        for post in early {
            let reply = try await client(server).postReceipt(appUserId: post.user, receipt: post.receipt)
            #expect([200, 202].contains(reply.status))
        }
        let verifiedEarly = Set(early.map { "\($0.user)|\($0.receipt)" }).count
        #expect(try await eventually { try await verifiedCount() == verifiedEarly }, "the first posts verify")
        var stalled = simulatorConfiguration.faults
        stalled.latencyMinMs = 10_000
        stalled.latencyMaxMs = 10_000
        try await stack.simulator.setFaults(stalled)
        for post in posts[early.count..<half] {
            let reply = try await client(server).postReceipt(appUserId: post.user, receipt: post.receipt)
            #expect([200, 202].contains(reply.status))
        }
        #expect(
            try await eventually { (try await stack.store.verificationCounts()[.verifying] ?? 0) > 0 },
            "verifications in flight at the kill")
        server.killNine()
        let afterFirstKill = try await stack.store.verificationCounts()
        #expect(afterFirstKill[.verified] == verifiedEarly, "the kill must land mid-run: \(afterFirstKill)")
        // Apple answers at its usual pace again.
        try await stack.simulator.setFaults(simulatorConfiguration.faults)

        // Run 2: restart on the same database, post the rest, kill again mid-run.
        server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
        for post in posts.suffix(from: half) {
            let reply = try await client(server).postReceipt(appUserId: post.user, receipt: post.receipt)
            #expect([200, 202].contains(reply.status))
        }
        let target = try await verifiedCount() + 5
        #expect(try await eventually(every: .milliseconds(10)) { try await verifiedCount() >= target }, "verifications flowing")
        server.killNine()

        // Run 3: restart and let everything finish (expired leases are taken up again).
        server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
        let distinct = Set(posts.map { "\($0.user)|\($0.receipt)" }).count
        _ = try await eventually(every: .milliseconds(100)) { try await verifiedCount() >= distinct }

        let counts = try await stack.store.verificationCounts()
        #expect(counts[.verified] == distinct, "every accepted receipt ends verified: \(counts)")
        #expect(counts.values.reduce(0, +) == distinct, "one verification per distinct receipt and user: \(counts)")
        let sold = try await stack.simulator.soldTransactions()
        #expect(try await stack.store.countTransactions(appId: "demo") == sold.count, "each sold transaction granted exactly once")
        var ledgerPurchases = 0
        var ledgerMicros: Int64 = 0
        for environment in ["production", "sandbox"] {
            let entries = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: environment, from: .distantPast, to: .distantFuture))
            ledgerPurchases += entries.filter { $0.event == .purchase }.count
            ledgerMicros += entries.compactMap(\.priceMicros).reduce(0, +)
        }
        let soldMicros = sold.compactMap { ($0["priceMicros"] as? NSNumber)?.int64Value }.reduce(0, +)
        #expect(ledgerPurchases == sold.count)
        // One purchase event per transaction sold, written in the grant's transaction: none lost
        // at a kill, none doubled by the retry after it.
        let purchaseTypes: Set<EventType> = [
            .initialPurchase, .renewal, .productChange, .consumablePurchase, .nonConsumablePurchase, .nonRenewingPurchase,
        ]
        let events = try await stack.store.events(appId: "demo", after: 0, types: [], limit: 100_000).map(\.event)
        #expect(events.filter { purchaseTypes.contains($0.type) }.count == sold.count, "one purchase event per transaction sold")
        #expect(Set(events.compactMap { purchaseTypes.contains($0.type) ? $0.transactionId : nil }).count == sold.count)
        #expect(ledgerMicros == soldMicros, "ledger sums match what the simulator sold")
        for (user, bought) in consumablesBought {
            let transactions = try await stack.store.transactions(appId: "demo", appUserId: user)
            #expect(transactions.map(\.credits).reduce(0, +) == 100 * bought, "\(user) credited once per purchase")
        }
        #expect(try await client(server).http.send(.GET, "/healthz").status == 200)
        server.terminate()
        try await stack.stop()
    }
}
