import Foundation
import JobQueue
public import Logging
public import Persistence
public import ServiceLifecycle
public import StoragePostgres
import StorageSQLite
import StorekeeperErrors

/// The database a process works on, chosen by `databasePath`: a file path opens the embedded
/// SQLite store, a `postgres://` URL the shared PostgreSQL store. Everything above the storage
/// port is the same code for both.
public struct StorageBackend: Sendable {
    public let store: any StorekeeperStore
    /// Set when the store is PostgreSQL: its connection pool must run as a service, and its
    /// job notifications can wake this process's runner.
    public let postgres: PostgresStore?
    /// For logs: the file path, or the URL without its password.
    public let description: String

    /// True for the values of `databasePath` that name a PostgreSQL database.
    public static func isPostgresURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// What is wrong with `databasePath`, or nil: a PostgreSQL URL must parse, a file path must
    /// not be empty. Here, not in the configuration, so the value type knows no adapter.
    static func problem(with databasePath: String) -> String? {
        if isPostgresURL(databasePath) {
            do { _ = try PostgresStore.Configuration(url: databasePath) } catch let error as PostgresStoreError {
                return error.message
            } catch { return "\(error)" }
            return nil
        }
        return databasePath.isEmpty ? "must name an SQLite file or a postgres:// URL" : nil
    }

    /// Opens the store without touching the database yet: PostgreSQL queries wait until the
    /// pool runs (`services`), so call `prepare()` from inside the running service group.
    public static func open(configuration: StorekeeperConfiguration, logger: Logger) throws -> StorageBackend {
        if isPostgresURL(configuration.databasePath) {
            let pg = try PostgresStore(configuration: .init(url: configuration.databasePath), logger: logger)
            return StorageBackend(store: pg, postgres: pg, description: pg.configuration.redactedDescription)
        }
        var sqlite = SQLiteStore.Configuration(path: configuration.databasePath)
        sqlite.synchronousFull = configuration.sqliteSynchronousFull
        let store = try SQLiteStore(configuration: sqlite)
        let absolute = URL(fileURLWithPath: configuration.databasePath).standardizedFileURL.path
        return StorageBackend(store: store, postgres: nil, description: "sqlite:\(absolute)")
    }

    /// Applies migrations. Safe in every process at every start, also concurrently.
    public func prepare() async throws {
        if let postgres {
            try await postgres.migrate()
        } else if let sqlite = store as? SQLiteStore {
            try sqlite.migrate()
        }
    }

    /// For one-shot tools outside a service group: runs the store's services in the background
    /// while `body` runs, then stops them.
    public func whileRunning<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let postgres else { return try await body() }
        return try await postgres.withRunningPool(body)
    }

    /// Services that must run before anything uses the store, first in the service group.
    public var services: [any Service] { postgres.map { [$0] } ?? [] }

    /// A service relaying other processes' commits: waking the store's `queued` signal when one
    /// enqueues a job (`wakesRunners`: this process runs jobs), and the store's verification watch
    /// when one changes a verification (`answersHTTP`). Nil when the database has no such channel
    /// (SQLite: one process enqueues, runs and answers, and is told directly).
    public func makeListener(wakesRunners: Bool, answersHTTP: Bool, logger: Logger) -> (any Service)? {
        guard wakesRunners || answersHTTP else { return nil }
        return postgres.map {
            PostgresJobListener(store: $0, signal: wakesRunners ? $0.queued : nil, relaysVerifications: answersHTTP, logger: logger)
        }
    }
}

/// Builds a service once the services before it in the group are running, then runs it in
/// the same task, so it sees the group's graceful shutdown. Used to migrate and seed a
/// PostgreSQL database only after its connection pool has started.
public struct DeferredService: Service, CustomStringConvertible {
    /// ServiceLifecycle logs every service: its name only, never the configuration and keys it holds.
    public var description: String { "DeferredService" }

    let make: @Sendable () async throws -> any Service

    public init(_ make: @escaping @Sendable () async throws -> any Service) {
        self.make = make
    }

    public func run() async throws {
        try await make().run()
    }
}

extension StorageBackend {
    /// A storage failure that a retry may cure, on either database.
    public static func isUnavailable(_ error: any Error) -> Bool {
        SQLiteStore.isUnavailable(error) || PostgresStore.isUnavailable(error)
    }
}
