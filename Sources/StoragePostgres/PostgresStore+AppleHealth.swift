import Foundation
import Persistence
import PostgresNIO

extension PostgresStore {
    public func recordAppleAnswered(endpoint: String, at: Date) async throws {
        let atMs = StoredTime.ms(at)
        try await transaction { connection in
            try await connection.execute(
                """
                INSERT INTO apple_health (endpoint, answered_at) VALUES (\(endpoint), \(atMs))
                ON CONFLICT (endpoint) DO UPDATE SET answered_at = GREATEST(apple_health.answered_at, EXCLUDED.answered_at)
                """, logger: self.logger)
        }
    }

    public func appleAnswered(endpoint: String) async throws -> Date? {
        try await read { connection in
            let rows = try await connection.rows(
                "SELECT answered_at FROM apple_health WHERE endpoint = \(endpoint)", logger: self.logger)
            return try rows.first.map { StoredTime.date(try $0.value("answered_at", as: Int64.self)) }
        }
    }
}
