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

/// What the scale-out suites share: a fresh PostgreSQL schema with the simulator in this process
/// and the child processes' configuration file, a client of one process, and the books' check.
protocol ScaleOutHarness {}

extension ScaleOutHarness {
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
}
