public import Foundation
import Logging
import Persistence
import PostgresNIO

extension PostgresStore {
    public func recordAttempt(key: String, at: Date, since: Date, forgetBefore: Date) async throws -> [Date] {
        let logger = self.logger
        let (atMs, sinceMs, forgetMs) = (StoredTime.ms(at) as Int64, StoredTime.ms(since) as Int64, StoredTime.ms(forgetBefore) as Int64)
        return try await transaction { connection in
            try await connection.execute("DELETE FROM counted_attempts WHERE at < \(forgetMs)", logger: logger)
            try await connection.execute("INSERT INTO counted_attempts (key, at) VALUES (\(key), \(atMs))", logger: logger)
            return try await Self.failures(connection, key: key, sinceMs: sinceMs, logger: logger)
        }
    }

    public func attempts(key: String, since: Date) async throws -> [Date] {
        let logger = self.logger
        let sinceMs = StoredTime.ms(since) as Int64
        return try await read { connection in try await Self.failures(connection, key: key, sinceMs: sinceMs, logger: logger) }
    }

    public func clearAttempts(key: String) async throws {
        let logger = self.logger
        try await transaction { connection in try await connection.execute("DELETE FROM counted_attempts WHERE key = \(key)", logger: logger) }
    }

    private static func failures(_ connection: PostgresConnection, key: String, sinceMs: Int64, logger: Logger) async throws -> [Date] {
        try await connection.rows("SELECT at FROM counted_attempts WHERE key = \(key) AND at >= \(sinceMs) ORDER BY at", logger: logger)
            .map { StoredTime.date(try $0.value("at", as: Int64.self)) }
    }
}
