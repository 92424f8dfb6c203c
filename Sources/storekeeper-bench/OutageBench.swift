import AppStoreSimulator
import ArgumentParser
import Foundation
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures

extension Bench {
    /// Issue #15's scenario: Apple fails for a while (refused, 503, HTML 200, hangs, 21005 and
    /// a plain outage in turn) while receipts arrive; then Apple returns. Measures how long after
    /// the return the last verification is final, and how many calls went to Apple meanwhile.
    struct Outage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "outage", abstract: "Recovery after an Apple outage: time from Apple's return to the last final verification.")
        @Option(help: "Receipts posted during the outage.") var receipts = 500
        @Option(help: "Seconds Apple fails.") var seconds = 60.0
        @Option(help: "Verification jobs in flight at once.") var workers = 64
        @Option(help: "postgres:// URL to measure PostgreSQL instead of SQLite.") var database: String?
        @Flag(help: "Turn the health state machine off (every job on its own backoff), for comparison.") var noHealth = false
        @Option(
            help:
                "Verify in this many `storekeeper worker` processes (PostgreSQL only; the bench process only answers HTTP); 0: in the bench process."
        ) var workerProcesses = 0

        func validate() throws {
            if workerProcesses > 0, database == nil { throw ValidationError("--worker-processes needs --database (PostgreSQL)") }
        }

        func run() async throws {
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.workers = workers
            configuration.attemptTimeoutSeconds = 10
            configuration.leaseSeconds = 60
            configuration.appleHealth.enabled = !noHealth
            configuration.runWorkers = workerProcesses == 0
            let simulator = LocalStack.simulatorConfiguration(for: configuration)
            let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, throughGateway: true)
            let processes = try await startWorkers(stack)
            defer { processes.forEach { $0.terminate() } }
            let app = configuration.apps[0]
            let purchases = try await buyConsumables(stack, count: receipts, bundleId: app.bundleId, environment: "production", concurrency: 16)

            // The outage: a plain outage first, then each kind of fault in turn.
            var faults = simulator.faults
            let phases: [(String, (inout FaultConfigurationEditor) -> Void)] = [
                ("refused", { $0.refused = true }), ("503 outage", { $0.outage = true }), ("HTTP 503", { $0.faults.http503Rate = 1 }),
                ("HTML 200", { $0.faults.html200Rate = 1 }),
                ("21005", { $0.faults.status21005Rate = 1 }),
                (
                    "hangs",
                    {
                        $0.faults.hangRate = 1; $0.faults.hangSeconds = 30
                    }
                ),
            ]
            let before = try await stack.simulator.stats()
            let started = ContinuousClock.now
            let phaseSeconds = seconds / Double(phases.count)
            var posted = 0
            for (name, apply) in phases {
                var editor = FaultConfigurationEditor(faults: simulator.faults)
                apply(&editor)
                faults = editor.faults
                if editor.outage { faults.outages = [.init(start: .distantPast, end: .distantFuture)] }
                try await stack.simulator.setFaults(faults)
                if editor.refused { await stack.gateway?.refuse() } else { try await stack.gateway?.accept() }
                FileHandle.standardError.write(Data("phase: \(name)\n".utf8))
                let share = (receipts - posted) / max(1, phases.count - phases.firstIndex { $0.0 == name }!)
                _ = try await postAll(stack.api, Array(purchases[posted..<(posted + share)]), concurrency: 8, prefix: "outage-\(name.prefix(4))")
                posted += share
                let phaseEnd = started.advanced(by: .milliseconds(Int64(phaseSeconds * 1000 * Double(phases.firstIndex { $0.0 == name }! + 1))))
                if ContinuousClock.now < phaseEnd { try await Task.sleep(until: phaseEnd) }
            }
            let during = try await stack.simulator.stats()
            try await stack.simulator.setFaults(simulator.faults)
            let returned = ContinuousClock.now
            _ = try await waitUntilFinal(stack.store, total: receipts, since: returned)
            let recovery = returned.duration(to: .now)
            let counts = try await stack.store.verificationCounts()
            let granted = try await stack.store.countTransactions(appId: app.id)
            try await stack.stop()
            let calls =
                during.filter { $0.key.hasPrefix("production.") || $0.key.hasPrefix("sandbox.") }.reduce(0) { $0 + $1.value }
                - before.filter { $0.key.hasPrefix("production.") || $0.key.hasPrefix("sandbox.") }.reduce(0) { $0 + $1.value }
            print(
                "outage: \(receipts) receipts posted during \(format(seconds)) s of faults; Apple calls during the outage \(calls); last final \(format(Double(recovery.components.seconds) + Double(recovery.components.attoseconds) / 1e18)) s after Apple's return; verified \(counts[.verified] ?? 0), invalid \(counts[.invalid] ?? 0), transactions granted \(granted); health \(noHealth ? "off" : "on"), workers \(workers)\(workerProcesses > 0 ? " in each of \(workerProcesses) worker processes" : ""), \(database == nil ? "sqlite" : "postgresql")"
            )
        }
    }
}

extension Bench.Outage {
    /// `storekeeper worker` processes on the stack's database and simulator, each logging to a
    /// file in a temporary folder.
    func startWorkers(_ stack: LocalStack) async throws -> [ChildProcess] {
        guard workerProcesses > 0 else { return [] }
        guard let binary = TestPaths.storekeeperBinary() else {
            throw ChildProcessError(message: "no storekeeper executable next to the bench: swift build --product storekeeper")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var child = stack.configuration
        child.port = 0
        child.runWorkers = true
        let configPath = directory.appendingPathComponent("config.json").path
        try JSONEncoder().encode(child).write(to: URL(fileURLWithPath: configPath))
        FileHandle.standardError.write(Data("worker logs: \(directory.path)\n".utf8))
        var processes: [ChildProcess] = []
        for i in 1...workerProcesses {
            processes.append(
                try await ChildProcess.worker(
                    binary: binary, configPath: configPath, logPath: directory.appendingPathComponent("worker-\(i).log").path))
        }
        return processes
    }
}

/// One phase's faults, with the outage as a flag (its window is set when applied).
struct FaultConfigurationEditor {
    var faults: FaultConfiguration
    var outage = false
    /// Nothing listens where verifyReceipt is called: connections are refused.
    var refused = false
}
