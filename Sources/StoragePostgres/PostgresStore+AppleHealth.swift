public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    public func sharedAppleHealth(endpoint: String) async throws -> SharedAppleHealth? {
        let logger = self.logger
        return try await read(on: .work) { connection in try await Self.sharedAppleHealth(connection, endpoint: endpoint, lock: false, logger: logger)
        }
    }

    public func moveSharedAppleHealth(
        endpoint: String, to state: AppleHealth.State, at: Date, events: @Sendable (SharedAppleHealth?) -> EventBatch?
    ) async throws -> Bool {
        let logger = self.logger
        let atMs = StoredTime.ms(at)
        return try await transaction(on: .work) { connection in
            // The row exists before it is locked, so processes moving it at once queue on the lock
            // and the second sees the first's state.
            try await connection.execute(
                """
                INSERT INTO apple_health (endpoint, state, since) VALUES (\(endpoint), 'healthy', 0)
                ON CONFLICT (endpoint) DO NOTHING
                """, logger: logger)
            let previous = try await Self.sharedAppleHealth(connection, endpoint: endpoint, lock: true, logger: logger)
            guard (previous?.state ?? .healthy) != state else { return false }
            try await connection.execute(
                "UPDATE apple_health SET state = \(state.rawValue), since = \(atMs) WHERE endpoint = \(endpoint)", logger: logger)
            try await connection.execute(
                "INSERT INTO apple_health_history (endpoint, state, at) VALUES (\(endpoint), \(state.rawValue), \(atMs))", logger: logger)
            if let batch = events(previous) { try await Self.record(batch, connection: connection, now: at, logger: logger) }
            return true
        }
    }

    public func appleHealthHistory(since: Date, limit: Int) async throws -> [AppleHealthMove] {
        let logger = self.logger
        let sinceMs = StoredTime.ms(since)
        return try await read(on: .requests) { connection in
            try await connection.rows(
                "SELECT endpoint, state, at FROM apple_health_history WHERE at >= \(sinceMs) ORDER BY at DESC, id DESC LIMIT \(limit)",
                logger: logger
            ).compactMap { row in
                // A state a later version wrote and this one does not know is left out, not fatal.
                guard let state = AppleHealth.State(rawValue: try row.value("state", as: String.self)) else { return nil }
                return AppleHealthMove(endpoint: try row.value("endpoint"), state: state, at: StoredTime.date(try row.value("at", as: Int64.self)))
            }
        }
    }

    public func notificationCounts(since: Date) async throws -> [NotificationCount] {
        let logger = self.logger
        let sinceMs = StoredTime.ms(since)
        return try await read { connection in
            try await connection.rows(
                """
                SELECT app_id, notification_type, outcome, COUNT(*) AS n FROM notifications WHERE received_at >= \(sinceMs)
                GROUP BY app_id, notification_type, outcome ORDER BY app_id, notification_type, outcome
                """, logger: logger
            ).map { row in
                NotificationCount(
                    appId: try row.value("app_id"), notificationType: try row.value("notification_type"),
                    outcome: NotificationOutcome(rawValue: try row.value("outcome")), count: Int(try row.value("n", as: Int64.self)))
            }
        }
    }

    static func sharedAppleHealth(
        _ connection: PostgresConnection, endpoint: String, lock: Bool, logger: Logger
    ) async throws -> SharedAppleHealth? {
        let query: PostgresQuery =
            lock
            ? "SELECT state, since FROM apple_health WHERE endpoint = \(endpoint) FOR UPDATE"
            : "SELECT state, since FROM apple_health WHERE endpoint = \(endpoint)"
        guard let row = try await connection.rows(query, logger: logger).first,
            let state = AppleHealth.State(rawValue: try row.value("state", as: String.self))
        else { return nil }
        let since = try row.value("since", as: Int64.self)
        // 0: the placeholder a move inserts before locking, never a state anyone saw.
        return since == 0 ? nil : SharedAppleHealth(state: state, since: StoredTime.date(since))
    }
}
