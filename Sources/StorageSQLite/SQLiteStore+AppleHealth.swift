import Foundation
import GRDB
import Persistence

extension SQLiteStore {
    public func recordAppleAnswered(endpoint: String, at: Date) async throws {
        try await pool.write { db in
            try db.execute(
                sql: """
                    INSERT INTO apple_health (endpoint, answered_at) VALUES (?, ?)
                    ON CONFLICT (endpoint) DO UPDATE SET answered_at = MAX(answered_at, excluded.answered_at)
                    """,
                arguments: [endpoint, StoredTime.ms(at)])
        }
    }

    public func appleAnswered(endpoint: String) async throws -> Date? {
        try await pool.read { db in
            try Int64.fetchOne(db, sql: "SELECT answered_at FROM apple_health WHERE endpoint = ?", arguments: [endpoint])
                .map(StoredTime.date)
        }
    }
}
