public import Foundation
import GRDB
import Persistence

extension SQLiteStore {
    public func recordAttempt(key: String, at: Date, since: Date, forgetBefore: Date) async throws -> [Date] {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM counted_attempts WHERE at < ?", arguments: [StoredTime.ms(forgetBefore) as Int64])
            try db.execute(sql: "INSERT INTO counted_attempts (key, at) VALUES (?, ?)", arguments: [key, StoredTime.ms(at) as Int64])
            return try Self.failures(db, key: key, since: since)
        }
    }

    public func attempts(key: String, since: Date) async throws -> [Date] {
        try await read { db in try Self.failures(db, key: key, since: since) }
    }

    public func clearAttempts(key: String) async throws {
        try await pool.write { db in try db.execute(sql: "DELETE FROM counted_attempts WHERE key = ?", arguments: [key]) }
    }

    private static func failures(_ db: Database, key: String, since: Date) throws -> [Date] {
        try Int64.fetchAll(
            db.cachedStatement(sql: "SELECT at FROM counted_attempts WHERE key = ? AND at >= ? ORDER BY at"),
            arguments: [key, StoredTime.ms(since) as Int64]
        ).map { StoredTime.date($0) }
    }
}
