import ArgumentParser
import Foundation
import StorageSQLite
import StorekeeperServer

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create or upgrade the database schema, then exit.")

    @Option(help: "SQLite database file (default: from configuration, else storekeeper.sqlite).") var database: String?
    @Option(help: "JSON configuration file.") var config: String?

    func run() async throws {
        var path = database ?? "storekeeper.sqlite"
        if database == nil, let file = config ?? ProcessInfo.processInfo.environment["STOREKEEPER_CONFIG"],
            let data = FileManager.default.contents(atPath: file)
        {
            path = try ConfigurationLoader.parse(data).databasePath
        }
        let store = try SQLiteStore(configuration: .init(path: path))
        try store.migrate()
        print("migrated \(URL(fileURLWithPath: path).standardizedFileURL.path): \(try store.appliedMigrations().joined(separator: ", "))")
    }
}
