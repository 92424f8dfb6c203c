import Foundation
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// An import across kill -9: the real `storekeeper` server is killed while the rows it was
/// given are being read from Apple, restarted, and the same command run again finishes it.
@Suite("import across kill -9")
struct ImportCrashTests {
    @Test("kill -9 mid-import: after a restart and the same command again, each customer's purchases are granted once; a third run changes nothing")
    func killNineMidImport() async throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-import-crash-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var configuration = LocalStack.testConfiguration(databasePath: directory.appendingPathComponent("db.sqlite").path, serverAPI: true)
        configuration.sqliteSynchronousFull = true
        configuration.workers = 2
        configuration.attemptTimeoutSeconds = 2
        configuration.leaseSeconds = 7
        configuration.notificationGapFill.enabled = false
        let stack = try await LocalStack.start(configuration: configuration, startServer: false)
        var childConfiguration = stack.configuration
        childConfiguration.port = 0
        let configPath = directory.appendingPathComponent("config.json").path
        try JSONEncoder().encode(childConfiguration).write(to: URL(fileURLWithPath: configPath))
        let logPath = directory.appendingPathComponent("server.log").path

        // 40 customers, each one purchase of a kind, imported by original transaction id.
        let products = ["com.example.coins100", "com.example.removeads", "com.example.pro.monthly", "com.example.season.pass"]
        var lines: [String] = []
        for i in 0..<40 {
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: products[i % products.count])
            lines.append(#"{"appUserId":"imported-\#(i)","originalTransactionId":"\#(bought.originalTransactionId)"}"#)
        }
        let file = directory.appendingPathComponent("customers.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: file)
        func verified() async throws -> Int { try await stack.store.verificationCounts()[.verified] ?? 0 }
        let key = ["STOREKEEPER_ADMIN_KEY": stack.api.adminKey]

        let firstHalf = directory.appendingPathComponent("first-half.jsonl")
        try Data(lines.prefix(20).joined(separator: "\n").utf8).write(to: firstHalf)

        // Run 1: the first half imported to its end; then Apple's Server API goes down, the
        // whole file is posted (the rest stored as jobs before the answer, failing while Apple
        // is down), and the server is killed with those in flight.
        var server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
        let half = try await AppleCommandTests.run(
            [firstHalf.path, "--app", "demo", "--url", server.baseURL, "--timeout", "300"], command: "import", environment: key)
        #expect(half.status == 0 && half.errors.contains("20 rows imported, 0 failed"), "\(half.errors)")
        try await stack.simulator.setServerAPIFaults(down: true)
        let posted = try await AppleCommandTests.run(
            [file.path, "--app", "demo", "--url", server.baseURL, "--no-wait"], command: "import", environment: key)
        #expect(posted.status == 0, "\(posted.errors)")
        #expect(
            try await eventually(every: .milliseconds(10)) {
                let counts = try await stack.store.verificationCounts()
                return (counts[.retryScheduled] ?? 0) + (counts[.verifying] ?? 0) > 0
            }, "the rest of the import is under way")
        server.killNine()
        #expect(try await verified() == 20, "the kill lands mid-import")
        try await stack.simulator.setServerAPIFaults(down: false)

        // Run 2: restarted; the same command follows the import to its end.
        server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
        let resumed = try await AppleCommandTests.run(
            [file.path, "--app", "demo", "--url", server.baseURL, "--timeout", "300"], command: "import", environment: key)
        #expect(resumed.status == 0 && resumed.errors.contains("40 rows imported, 0 failed"), "\(resumed.errors)")

        let sold = try await stack.simulator.soldTransactions()
        #expect(try await stack.store.countTransactions(appId: "demo") == sold.count, "each sold transaction granted exactly once")
        let ledger = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture))
        #expect(ledger.filter { $0.event == .purchase }.count == sold.count)
        let ledgerMicros: Int64 = ledger.compactMap(\.priceMicros).reduce(0, +)
        let soldMicros: Int64 = sold.compactMap { ($0["priceMicros"] as? NSNumber)?.int64Value }.reduce(0, +)
        #expect(ledgerMicros == soldMicros, "the ledger sums what was sold")
        let events = try await stack.store.events(appId: "demo", after: 0, types: [], limit: 10_000).map(\.event)
        let purchaseTypes: Set<EventType> = [.initialPurchase, .consumablePurchase, .nonConsumablePurchase, .nonRenewingPurchase]
        let purchases = events.filter { purchaseTypes.contains($0.type) }
        #expect(purchases.count == sold.count && Set(purchases.compactMap(\.transactionId)).count == sold.count, "one purchase event each")
        #expect(try await stack.store.transactions(appId: "demo", appUserId: "imported-0").map(\.credits) == [100])

        // Run 3: nothing changes.
        let again = try await AppleCommandTests.run(
            [file.path, "--app", "demo", "--url", server.baseURL, "--timeout", "300"], command: "import", environment: key)
        #expect(again.status == 0, "\(again.errors)")
        #expect(try await stack.store.events(appId: "demo", after: 0, types: [], limit: 10_000).count == events.count)
        #expect(try await stack.store.countTransactions(appId: "demo") == sold.count)
        server.terminate()
        try await stack.stop()
    }
}
