import Foundation
import GRDB
public import JobQueue
public import Persistence
import Tracing

/// The embedded storage adapter: one SQLite file in WAL mode through GRDB. Writes are
/// serialized by SQLite itself, so each port method is one short write transaction.
public final class SQLiteStore: Sendable {
    public struct Configuration: Sendable {
        /// Path of the database file; `:memory:` is not supported (readers need a file in WAL mode).
        public var path: String
        /// `FULL` syncs every commit to disk, so a 202 survives power loss; `NORMAL` survives
        /// process crashes only, and is faster.
        public var synchronousFull: Bool = true

        public init(path: String) { self.path = path }
    }

    let pool: DatabasePool
    let committer = GroupCommitter()
    public let verificationWatch = VerificationWatch()
    /// Woken after each commit that queued a job or made one due (`QueuedJobsObserver`).
    public let queued = WakeSignal()
    public let path: String

    public init(configuration: Configuration) throws {
        var config = GRDB.Configuration()
        config.busyMode = .timeout(10)
        config.maximumReaderCount = 8
        let full = configuration.synchronousFull
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(full ? "FULL" : "NORMAL")")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // Freed cells and pages are zeroed, so a deleted customer's words do not stay in the
            // file's free space (docs/CUSTOMERS.md).
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        pool = try DatabasePool(path: configuration.path, configuration: config)
        path = configuration.path
        pool.add(transactionObserver: QueuedJobsObserver(signal: queued), extent: .databaseLifetime)
    }

    /// Applies every migration not yet applied. Safe to run at each start and concurrently.
    public func migrate() throws {
        try SQLiteMigrations.migrator.migrate(pool)
    }

    /// Every write of the port goes through here: one unit of the group commit (one savepoint in
    /// a transaction shared with whatever else is waiting), traced as one database span. Workers'
    /// writes pass `.work`: requests go before them.
    func write<T: Sendable>(
        priority: GroupCommitter.Priority = .request, _ work: @escaping @Sendable (Database) throws -> T
    ) async throws -> T {
        try await withSpan("sqlite write", ofKind: .client) { span in
            span.attributes["db.system.name"] = "sqlite"
            return try await committer.write(pool: pool, priority: priority, work)
        }
    }

    /// Every read of the port goes through here: a snapshot from the reader pool, traced.
    func read<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withSpan("sqlite read", ofKind: .client) { span in
            span.attributes["db.system.name"] = "sqlite"
            return try await pool.read(work)
        }
    }

    /// Names of the migrations applied so far, oldest first.
    public func appliedMigrations() throws -> [String] {
        try pool.read { db in try SQLiteMigrations.migrator.appliedMigrations(db) }
    }
}

/// `?, ?, ?` for an IN list.
func placeholders(_ count: Int) -> String {
    Array(repeating: "?", count: count).joined(separator: ", ")
}
