import ArgumentParser
import Foundation
import Logging
import StoragePostgres
import StorageSQLite
import StorekeeperServer

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create or upgrade the database schema, then exit.")

    @Option(help: "SQLite file or postgres:// URL (default: from configuration, else storekeeper.sqlite).") var database: String?
    @Option(help: "JSON configuration file.") var config: String?

    func run() async throws {
        var configuration = StorekeeperConfiguration()
        if database == nil, let file = config ?? ProcessInfo.processInfo.environment["STOREKEEPER_CONFIG"],
            let data = FileManager.default.contents(atPath: file)
        {
            configuration.databasePath = try ConfigurationLoader.parse(data).databasePath
        }
        if let database { configuration.databasePath = database }
        let backend = try StorageBackend.open(configuration: configuration, logger: Logger(label: "storekeeper.migrate"))
        let applied = try await backend.whileRunning {
            try await backend.prepare()
            if let postgres = backend.postgres { return try await postgres.appliedMigrations() }
            return try (backend.store as? SQLiteStore)?.appliedMigrations() ?? []
        }
        print("migrated \(backend.description): \(applied.joined(separator: ", "))")
    }
}
