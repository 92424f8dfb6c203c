import AppStoreSimulator
import ArgumentParser
import Foundation
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures

extension Bench {
    /// Issue #27's import at scale: customers in every state (`ImportPopulation`) are told to one
    /// server live, then imported with `storekeeper import` into a `storekeeper serve` process of
    /// their own, killed with -9 halfway and restarted; the two servers' answers are compared
    /// customer by customer, a second run must change nothing, and the rate is measured against
    /// the simulator enforcing Apple's published limits. Exits 1 on any difference.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Customers in every state seen live, imported into another server (kill -9 halfway), compared; rows/s under Apple's limits.")
        @Option(help: "Customers (13 states in turn).") var customers = 10_000
        @Option(help: "postgres:// URL: both servers on PostgreSQL, each in a schema of its own (default: SQLite files).") var database: String?
        @Option(help: "The simulator enforces Apple's published Server API limits at this multiple (0: no limit).") var appleScale = 1.0
        @Option(help: "Seconds of the simulator's counting window (Apple's: 3600).") var appleWindow = 1.0
        @Option(help: "The importing server's share of Apple's limits (above 1 it exceeds them and meets 429s).") var share = 1.0
        @Option(help: "Verification jobs in flight at once in each server.") var workers = 32
        @Flag(help: "Import without the kill -9.") var noKill = false

        /// A simulated month long enough that nothing falls due while the benchmark runs.
        static let month = 86_400.0

        func run() async throws {
            guard let binary = TestPaths.storekeeperBinary() else {
                throw ValidationError("no storekeeper executable next to the bench: swift build --product storekeeper")
            }
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database), serverAPI: true)
            configuration.notificationGapFill.enabled = false
            configuration.workers = workers
            var simulatorConfiguration = LocalStack.simulatorConfiguration(for: configuration, secondsPerMonth: Self.month)
            simulatorConfiguration.gracePeriodSeconds = 3 * Self.month
            let stack = try await LocalStack.start(configuration: configuration, simulator: simulatorConfiguration)
            try await stack.stoppedOnError { try await measure(stack, binary: binary) }
        }

        /// Live, then imported through a kill -9, then compared.
        func measure(_ stack: LocalStack, binary: String) async throws {
            let configuration = stack.configuration
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-bench-import-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            note("files: \(directory.path)")

            // Live: each purchase posted by its app, then a month and a week of Apple's notifications.
            var clock = ContinuousClock.now
            let population = try await ImportPopulation.buy(
                count: customers, simulator: stack.simulator, bundleId: configuration.apps[0].bundleId, live: stack.api, concurrency: 16)
            try await settle(stack, stack.store)
            try await stack.sendNotifications()
            try await population.age(simulator: stack.simulator, seconds: Self.month * 37 / 30 + 5)
            try await settle(stack, stack.store)
            note("live: \(customers) customers bought, posted and aged in \(format(seconds(clock.duration(to: .now)))) s")
            let everything = LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture)
            let live = try await population.snapshot(subscriber: stack.api.subscriber, ledger: try await stack.store.ledger(everything))

            // Imported: a `storekeeper serve` of its own, on an empty database.
            var child = stack.configuration
            child.port = 0
            child.databasePath = benchDatabase(database)
            child.apps[0].serverAPI?.rateLimitShare = share
            let configPath = directory.appendingPathComponent("config.json").path
            try JSONEncoder().encode(child).write(to: URL(fileURLWithPath: configPath))
            let file = directory.appendingPathComponent("customers.jsonl")
            try Data(population.importLines.joined(separator: "\n").utf8).write(to: file)
            let logPath = directory.appendingPathComponent("server.log").path
            if appleScale > 0 { try await stack.simulator.setServerAPIRateLimits(scale: appleScale, windowSeconds: appleWindow) }
            let statsBefore = try await stack.simulator.stats()
            var server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
            let imported = try await stack.startIndependentServer(databasePath: child.databasePath, runWorkers: false)
            do {
                clock = .now
                var killedAt: Int?
                if !noKill {
                    _ = try await command(binary, file, url: server.baseURL, stack: stack, extra: ["--no-wait"])
                    while true {
                        let verified = try await imported.store.verificationCounts()[.verified] ?? 0
                        if verified >= customers / 2 { break }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    server.killNine()
                    killedAt = try await imported.store.verificationCounts()[.verified] ?? 0
                    note("import: killed with -9 at \(killedAt ?? 0) verified; restarting")
                    server = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
                }
                let status = try await command(binary, file, url: server.baseURL, stack: stack)
                let elapsed = seconds(clock.duration(to: .now))
                let statsAfter = try await stack.simulator.stats()
                let counts = try await imported.store.verificationCounts()

                // A second run: the same verifications, nothing new.
                let events = try await imported.store.events(appId: "demo", after: 0, types: [], limit: 1_000_000).count
                let rows = try await imported.store.ledger(everything).count
                let again = try await command(binary, file, url: server.baseURL, stack: stack)
                let eventsAfter = try await imported.store.events(appId: "demo", after: 0, types: [], limit: 1_000_000).count
                let rowsAfter = try await imported.store.ledger(everything).count
                let unchanged = eventsAfter == events && rowsAfter == rows
                server.terminate()

                // Compared customer by customer, read at the simulated instant both share.
                let ledger = try await imported.store.ledger(everything)
                let seen = try await population.snapshot(subscriber: imported.api.subscriber, ledger: ledger)
                let differing = population.customers.filter { seen[$0.appUserId] != live[$0.appUserId] }
                for customer in differing.prefix(3) {
                    let user = customer.appUserId
                    note("differs: \(user) (\(customer.kind)): imported \(seen[user] ?? []) ≠ live \(live[user] ?? [])")
                }
                try await imported.stop()
                try await stack.stop()
                func delta(_ key: String) -> Int { (statsAfter[key] ?? 0) - (statsBefore[key] ?? 0) }
                let history = delta("serverapi.production.history.200")
                print(
                    "import: \(customers) customers in \(ImportPopulation.Kind.allCases.count) states, \(database == nil ? "sqlite" : "postgresql"); "
                        + "imported in \(format(elapsed)) s = \(format(Double(customers) / elapsed)) rows/s"
                        + (killedAt.map { " (kill -9 at \($0) verified, restarted)" } ?? "")
                        + "; Apple's limits ×\(format(appleScale)) per \(format(appleWindow)) s window, server share \(format(share)); "
                        + "simulator 429s \(delta("serverapi.rate_limited")), history calls answered \(history); "
                        + "verified \(counts[.verified] ?? 0), invalid \(counts[.invalid] ?? 0); "
                        + "differing customers \(differing.count); ledger rows \(ledger.count) (all imported: \(ledger.allSatisfy(\.imported))); "
                        + "command exit \(status), second run exit \(again) changed nothing: \(unchanged)")
                guard differing.isEmpty, unchanged, status == 0, again == 0, counts[.verified] == customers, ledger.allSatisfy(\.imported) else {
                    throw ExitCode.failure
                }
            } catch {
                try? await imported.stop()
                throw error
            }
        }

        /// Waits until Apple told the server everything and every verification is final.
        func settle(_ stack: LocalStack, _ store: any StorekeeperStore) async throws {
            while true {
                if try await stack.simulator.notificationsSettled(),
                    try await store.verificationCounts().keys.allSatisfy({ $0.isFinal })
                {
                    return
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }

        /// `storekeeper import FILE` against `url`; its progress goes to this standard error.
        func command(_ binary: String, _ file: URL, url: String, stack: LocalStack, extra: [String] = []) async throws -> Int32 {
            let process = try SpawnedProcess(
                executable: binary, arguments: ["import", file.path, "--app", "demo", "--url", url, "--timeout", "7200"] + extra,
                environment: ProcessInfo.processInfo.environment.merging(["STOREKEEPER_ADMIN_KEY": stack.configuration.adminKey]) { $1 })
            return
                switch await process.exit()
            {
            case .exited(let code): code
            case .signalled: -1
            }
        }

        func note(_ text: String) { FileHandle.standardError.write(Data((text + "\n").utf8)) }
    }
}
