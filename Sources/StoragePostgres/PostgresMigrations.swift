import Foundation
import Logging
import Persistence
import PostgresNIO

/// Versioned schema, the same tables and constraints as the SQLite adapter's. A released
/// migration is never edited; changes are new migrations, applied in order, each once.
enum PostgresMigrations {
    struct Migration: Sendable {
        var name: String
        var sql: String

        /// The extended query protocol takes one statement at a time; the scripts hold no
        /// semicolons except between statements.
        var statements: [String] {
            sql.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
        }
    }

    /// Every migration, in the order applied; one file per migration in Migrations/.
    static let all: [Migration] = [
        m0001CreateSchema, m0002ProvisionalGrants, m0003Notifications, m0004RefundReversals, m0005OwnershipClaims, m0006Events, m0007Webhooks,
        m0008TransactionFields2026, m0009AppleHealth, m0010EventWireBody, m0011Entitlements, m0012Offerings, m0013Customers,
        m0014ImportedRows, m0015Revenue, m0016AnalyticsIndexes, m0017CustomerSearch, m0018KeptFigures, m0019ConsoleSignOuts, m0020AppleHealthHistory,
        m0021GapFillRuns, m0022RenewalSignedAt, m0023AppleCalls, m0024CreditSpends, m0025RefundRequests, m0026WinBackOffers,
        m0027CreditSpendKeysPerUser, m0028AdminTokens, m0029AppTransactions, m0030PriceIncreases, m0031EntitlementLapses, m0032Experiments,
        m0033OneOpenExperiment,
    ]
}

extension PostgresStore {
    /// A constant key for the advisory lock that serializes migrations across processes
    /// starting at once ("storekeeper migrate" in ASCII-ish hex).
    private static let migrationLockKey: Int64 = 0x5354_4f52_454b_4550

    /// Creates the schema if needed and applies every migration not yet applied, each in its own
    /// transaction under a cluster-wide advisory lock, so many processes may start together.
    public func migrate() async throws {
        let schema = configuration.schema
        try await transaction { connection in
            try await connection.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", logger: logger)
            try await connection.execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
            try await connection.execute(
                PostgresQuery(
                    unsafeSQL: "CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"),
                logger: logger)
        }
        for migration in PostgresMigrations.all {
            try await transaction { connection in
                try await connection.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", logger: logger)
                let done = try await connection.count(
                    "SELECT 1 FROM schema_migrations WHERE name = \(migration.name)", logger: logger)
                guard done == 0 else { return }
                for statement in migration.statements {
                    try await connection.execute(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let now = StoredTime.ms(Date())
                try await connection.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (\(migration.name), \(now))", logger: logger)
            }
        }
    }

    /// Names of the migrations applied so far, oldest first.
    public func appliedMigrations() async throws -> [String] {
        try await read { connection in
            try await connection.rows("SELECT name FROM schema_migrations ORDER BY name", logger: logger).map {
                try $0.value("name", as: String.self)
            }
        }
    }

    /// Drops this store's schema and everything in it. For tests and benchmarks only.
    public func dropSchema() async throws {
        let schema = configuration.schema
        _ = try await read { connection in
            try await connection.execute(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"), logger: logger)
        }
    }
}
