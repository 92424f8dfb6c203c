import Foundation
public import Persistence
import StorageSQLite

/// The storage conformance harness: the adapters every conformance test runs on.
/// Each conformance test receives a fresh store from every factory in `StoreFactory.all`: SQLite, and PostgreSQL whenever a test server is configured
/// (always under scripts/test.sh and CI, where its absence fails `postgresIsConfigured`).
public struct StoreFactory: CustomStringConvertible, Sendable {
    public var description: String
    public var make: @Sendable () async throws -> any StorekeeperStore

    public static let sqlite = StoreFactory(description: "sqlite") {
        let store = try SQLiteStore(configuration: .init(path: LocalStack.temporaryDatabasePath()))
        try store.migrate()
        return store
    }

    public static let postgres = StoreFactory(description: "postgres") { try await PostgresTestDatabase.makeStore() }

    public static var all: [StoreFactory] { PostgresTestDatabase.url == nil ? [.sqlite] : [.sqlite, .postgres] }
}
