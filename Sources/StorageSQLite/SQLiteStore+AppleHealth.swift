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
            if let batch = events(previous) { try Self.record(batch, db: db, now: at) }
            return true
        }
    }

    static func sharedAppleHealth(_ db: Database, endpoint: String) throws -> SharedAppleHealth? {
        guard let row = try Row.fetchOne(db, sql: "SELECT state, since FROM apple_health WHERE endpoint = ?", arguments: [endpoint]),
            let state = AppleHealth.State(rawValue: row["state"])
        else { return nil }
        return SharedAppleHealth(state: state, since: StoredTime.date(row["since"] as Int64))
    }
}
