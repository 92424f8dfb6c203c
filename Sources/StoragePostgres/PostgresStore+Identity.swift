public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: IdentityStore {
    public func canonicalId(appId: String, alias: String) async throws -> String? {
        try await read { connection in
            try await connection.rows("SELECT app_user_id FROM aliases WHERE app_id = \(appId) AND alias_id = \(alias)", logger: self.logger)
                .first?.value("app_user_id", as: String.self)
        }
    }

    public func aliases(appId: String, appUserId: String) async throws -> [String] {
        try await read { connection in try await Self.aliases(connection, appId: appId, appUserId: appUserId, logger: self.logger) }
    }

    static func aliases(_ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger) async throws -> [String] {
        try await connection.rows(
            "SELECT alias_id FROM aliases WHERE app_id = \(appId) AND app_user_id = \(appUserId) ORDER BY created_at, alias_id", logger: logger
        ).map { try $0.value("alias_id", as: String.self) }
    }

    public func link(
        appId: String, alias: String, to appUserId: String, transfer: Bool, now: Date,
        events: @escaping @Sendable ([TransactionRecord]) -> EventBatch
    ) async throws -> IdentityLink {
        try await transaction { connection in
            let logger = self.logger
            // The alias row, locked when it exists; two first links at once meet on its primary
            // key and the loser runs again (then sees the winner's).
            let linked = try await connection.rows(
                "SELECT app_user_id FROM aliases WHERE app_id = \(appId) AND alias_id = \(alias) FOR UPDATE", logger: logger
            ).first?.value("app_user_id", as: String.self)
            if let linked, linked != appUserId { return .linkedElsewhere }
            let owned = try await Self.transactions(connection, appId: appId, appUserId: alias, logger: logger)
            if linked == nil {
                if !transfer, !owned.isEmpty { return .keptWithAnonymous(owned: owned) }
                try await connection.execute(
                    "INSERT INTO aliases (app_id, alias_id, app_user_id, created_at) VALUES (\(appId), \(alias), \(appUserId), \(StoredTime.ms(now)))",
                    logger: logger)
            }
            guard transfer else { return linked == nil ? .linked(moved: []) : .alreadyLinked }
            for table in CustomerTables.transferred {
                try await connection.execute(
                    "UPDATE \(unescaped: table) SET app_user_id = \(appUserId) WHERE app_id = \(appId) AND app_user_id = \(alias)", logger: logger)
            }
            for grant in try await Self.promotionalGrants(connection, appId: appId, appUserId: alias, logger: logger) {
                var moved = grant
                moved.appUserId = appUserId
                try await connection.execute(
                    """
                    UPDATE promotional_grants SET app_user_id = \(appUserId), body = \(StoredJSON.encode(moved))
                    WHERE app_id = \(appId) AND id = \(grant.id)
                    """, logger: logger)
            }
            // A claim the user holds already stays theirs; the alias's others move.
            try await connection.execute(
                """
                UPDATE ownership_claims AS c SET app_user_id = \(appUserId) WHERE c.app_id = \(appId) AND c.app_user_id = \(alias)
                AND NOT EXISTS (SELECT 1 FROM ownership_claims o WHERE o.app_id = c.app_id
                    AND o.original_transaction_id = c.original_transaction_id AND o.app_user_id = \(appUserId))
                """, logger: logger)
            try await connection.execute("DELETE FROM ownership_claims WHERE app_id = \(appId) AND app_user_id = \(alias)", logger: logger)
            // Verifications still to run grant to the user; one the user also holds stays as history.
            try await connection.execute(
                """
                UPDATE verifications AS v SET app_user_id = \(appUserId) WHERE v.app_id = \(appId) AND v.app_user_id = \(alias)
                AND NOT EXISTS (SELECT 1 FROM verifications o WHERE o.app_id = v.app_id AND o.receipt_hash = v.receipt_hash
                    AND o.generation = v.generation AND o.app_user_id = \(appUserId))
                """, logger: logger)
            for table in CustomerTables.transferredUnlessPresent {
                try await connection.execute(
                    """
                    UPDATE \(unescaped: table) SET app_user_id = \(appUserId) WHERE app_id = \(appId) AND app_user_id = \(alias)
                    AND NOT EXISTS (SELECT 1 FROM \(unescaped: table) WHERE app_id = \(appId) AND app_user_id = \(appUserId))
                    """, logger: logger)
                try await connection.execute(
                    "DELETE FROM \(unescaped: table) WHERE app_id = \(appId) AND app_user_id = \(alias)", logger: logger)
            }
            if !owned.isEmpty {
                let moved = owned.map { record in
                    var record = record
                    record.appUserId = appUserId
                    return record
                }
                try await Self.record(events(moved), connection: connection, now: now, logger: logger)
            }
            return linked == nil || !owned.isEmpty ? .linked(moved: owned) : .alreadyLinked
        }
    }
}
