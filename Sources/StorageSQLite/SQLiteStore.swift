import Foundation
import GRDB
import JobQueue
public import Persistence

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
    public let path: String

    public init(configuration: Configuration) throws {
        var config = GRDB.Configuration()
        config.busyMode = .timeout(10)
        config.maximumReaderCount = 8
        let full = configuration.synchronousFull
        config.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(full ? "FULL" : "NORMAL")")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        pool = try DatabasePool(path: configuration.path, configuration: config)
        path = configuration.path
    }

    /// Applies every migration not yet applied. Safe to run at each start and concurrently.
    public func migrate() throws {
        try SQLiteMigrations.migrator.migrate(pool)
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
