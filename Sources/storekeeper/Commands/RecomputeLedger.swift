import ArgumentParser
import Configuration
import Foundation
import Logging
import StorekeeperCore
import StorekeeperServer

/// `storekeeper recompute-ledger`: the ledger rows booked at the list price before the ledger
/// took Apple's charged price (M0015), booked again from the signed evidence kept with them
/// (docs/REVENUE.md). Runs against the database directly, beside a running server or not.
struct RecomputeLedger: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "recompute-ledger",
        abstract: "Book estimated ledger rows again at what Apple charged, from the signed evidence stored with them.")

    @Option(help: "JSON configuration file (also STOREKEEPER_CONFIG).") var config: String?
    @Option(help: "SQLite file or postgres:// URL (default: from configuration).") var database: String?
    @Option(help: "Rows per transaction (1-5000).") var batch = 500

    func validate() throws {
        guard (1...5_000).contains(batch) else { throw ValidationError("--batch must be 1-5000") }
    }

    func run() async throws {
        let logger = LogSetup.bootstrap(level: "warning")
        var flags: [String: ConfigContent] = [:]
        if let database { flags["databasePath"] = .string(database) }
        let configuration = try CommandConfigurationLoading.load(file: config, flags: flags)
        let backend = try CommandConfigurationLoading.openDatabase(configuration: configuration, logger: logger)
        let results = try await backend.whileRunning {
            try await CommandConfigurationLoading.prepareDatabase(backend)
            return try await EstimatedLedgerRecompute.run(configuration: configuration, store: backend.store, now: Date(), batch: batch) {
                app, progress in
                FileHandle.standardError.write(Data("\r\(app): \(progress.read) estimated rows read, \(progress.recomputed) recomputed".utf8))
            }
        }
        FileHandle.standardError.write(Data("\n".utf8))
        for (app, progress) in results {
            print("\(app): \(progress.recomputed) rows booked again at the charged price; \(progress.left) stay estimated (no signed price kept)")
        }
    }
}
