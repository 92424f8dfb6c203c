public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    public func sharedAppleHealth(endpoint: String) async throws -> SharedAppleHealth? {
        try await read { db in try Self.sharedAppleHealth(db, endpoint: endpoint) }
    }

    public func moveSharedAppleHealth(
        endpoint: String, to state: AppleHealth.State, at: Date, events: @Sendable (SharedAppleHealth?) -> EventBatch?
    ) async throws -> Bool {
        try await pool.write { db in
            let previous = try Self.sharedAppleHealth(db, endpoint: endpoint)
            guard (previous?.state ?? .healthy) != state else { return false }
            try db.execute(
                sql: """
                    INSERT INTO apple_health (endpoint, state, since) VALUES (?, ?, ?)
                    ON CONFLICT (endpoint) DO UPDATE SET state = excluded.state, since = excluded.since
                    """,
                arguments: [endpoint, state.rawValue, StoredTime.ms(at)])
            try db.execute(
                sql: "INSERT INTO apple_health_history (endpoint, state, at) VALUES (?, ?, ?)",
                arguments: [endpoint, state.rawValue, StoredTime.ms(at)])
            if let batch = events(previous) { try Self.record(batch, db: db, now: at) }
            return true
        }
    }

    public func appleHealthHistory(since: Date, limit: Int) async throws -> [AppleHealthMove] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT endpoint, state, at FROM apple_health_history WHERE at >= ? ORDER BY at DESC, id DESC LIMIT ?",
                arguments: [StoredTime.ms(since), limit]
            ).compactMap { row in
                // A state a later version wrote and this one does not know is left out, not fatal.
                AppleHealth.State(rawValue: row["state"]).map {
                    AppleHealthMove(endpoint: row["endpoint"], state: $0, at: StoredTime.date(row["at"] as Int64))
                }
            }
        }
    }

    public func notificationCounts(since: Date) async throws -> [NotificationCount] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT app_id, notification_type, outcome, COUNT(*) AS n FROM notifications WHERE received_at >= ?
                    GROUP BY app_id, notification_type, outcome ORDER BY app_id, notification_type, outcome
                    """, arguments: [StoredTime.ms(since)]
            ).map { row in
                NotificationCount(
                    appId: row["app_id"], notificationType: row["notification_type"], outcome: NotificationOutcome(rawValue: row["outcome"]),
                    count: row["n"])
            }
        }
    }

    static func sharedAppleHealth(_ db: Database, endpoint: String) throws -> SharedAppleHealth? {
        guard let row = try Row.fetchOne(db, sql: "SELECT state, since FROM apple_health WHERE endpoint = ?", arguments: [endpoint]),
            let state = AppleHealth.State(rawValue: row["state"])
        else { return nil }
        return SharedAppleHealth(state: state, since: StoredTime.date(row["since"] as Int64))
    }
}
