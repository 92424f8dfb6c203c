public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: PromotionalGrantStore {
    public func recordPromotionalGrant(
        _ grant: PromotionalGrant, audit: AuditEntry, events: EventBatch, now: Date
    ) async throws -> PromotionalGrant {
        let logger = self.logger
        return try await transaction { connection in
            // The primary key (app, id) makes a retry a no-op: nothing else is written then.
            let inserted = try await connection.count(
                """
                INSERT INTO promotional_grants (app_id, id, app_user_id, body, revoked_at, created_at)
                VALUES (\(grant.appId), \(grant.id), \(grant.appUserId), \(StoredJSON.encode(grant)), NULL, \(StoredTime.ms(now)))
                ON CONFLICT (app_id, id) DO NOTHING RETURNING 1
                """, logger: logger)
            guard inserted == 1 else {
                return try await Self.promotionalGrant(connection, appId: grant.appId, grantId: grant.id, logger: logger) ?? grant
            }
            try await Self.recordAudit(connection, audit, logger: logger)
            try await Self.record(events, connection: connection, now: now, logger: logger)
            return grant
        }
    }

    public func revokePromotionalGrant(
        appId: String, grantId: String, at: Date, audit: AuditEntry, events: @escaping @Sendable (PromotionalGrant) -> EventBatch, now: Date
    ) async throws -> (grant: PromotionalGrant, revoked: Bool)? {
        let logger = self.logger
        return try await transaction { connection in
            guard var grant = try await Self.promotionalGrant(connection, appId: appId, grantId: grantId, logger: logger) else { return nil }
            guard grant.revokedAt == nil else { return (grant, false) }
            grant.revokedAt = at
            // Guarded by the state read: only a grant still not revoked is revoked, once.
            let updated = try await connection.count(
                """
                UPDATE promotional_grants SET body = \(StoredJSON.encode(grant)), revoked_at = \(StoredTime.ms(at))
                WHERE app_id = \(appId) AND id = \(grantId) AND revoked_at IS NULL RETURNING 1
                """, logger: logger)
            guard updated == 1 else {
                return (try await Self.promotionalGrant(connection, appId: appId, grantId: grantId, logger: logger) ?? grant, false)
            }
            try await Self.recordAudit(connection, audit, logger: logger)
            try await Self.record(events(grant), connection: connection, now: now, logger: logger)
            return (grant, true)
        }
    }

    public func promotionalGrant(appId: String, grantId: String) async throws -> PromotionalGrant? {
        try await read { connection in try await Self.promotionalGrant(connection, appId: appId, grantId: grantId, logger: self.logger) }
    }

    public func promotionalGrants(appId: String, appUserId: String) async throws -> [PromotionalGrant] {
        try await read { connection in
            try await Self.promotionalGrants(connection, appId: appId, appUserId: appUserId, logger: self.logger)
        }
    }

    public func auditEntries(appId: String, appUserId: String, limit: Int) async throws -> [RecordedAuditEntry] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT cursor, body FROM audit_log WHERE app_id = \(appId) AND app_user_id = \(appUserId)
                ORDER BY cursor DESC LIMIT \(Int64(limit))
                """, logger: self.logger
            ).compactMap { row in
                StoredJSON.decode(AuditEntry.self, try row.value("body", as: String.self)).map {
                    RecordedAuditEntry(cursor: (try? row.value("cursor", as: Int64.self)) ?? 0, entry: $0)
                }
            }
        }
    }

    public func auditEntries(matching query: AuditQuery) async throws -> [RecordedAuditEntry] {
        let (since, until) = (StoredTime.ms(query.since), StoredTime.ms(query.until))
        let everyApp = query.appIds == nil
        return try await read { connection in
            try await connection.rows(
                """
                SELECT cursor, body FROM audit_log
                WHERE cursor > \(query.after) AND (\(everyApp) OR app_id = ANY(\(query.appIds ?? [])))
                  AND (\(query.actor)::text IS NULL OR actor = \(query.actor)) AND (\(query.action)::text IS NULL OR action = \(query.action))
                  AND (\(query.appUserId)::text IS NULL OR app_user_id = \(query.appUserId))
                  AND (\(since)::bigint IS NULL OR at >= \(since)) AND (\(until)::bigint IS NULL OR at < \(until))
                ORDER BY cursor LIMIT \(Int64(query.limit))
                """, logger: self.logger
            ).compactMap { row in
                StoredJSON.decode(AuditEntry.self, try row.value("body", as: String.self)).map {
                    RecordedAuditEntry(cursor: (try? row.value("cursor", as: Int64.self)) ?? 0, entry: $0)
                }
            }
        }
    }

    static func promotionalGrant(
        _ connection: PostgresConnection, appId: String, grantId: String, logger: Logger
    ) async throws
        -> PromotionalGrant?
    {
        try await connection.rows(
            "SELECT body FROM promotional_grants WHERE app_id = \(appId) AND id = \(grantId)", logger: logger
        ).first.flatMap { StoredJSON.decode(PromotionalGrant.self, try $0.value("body", as: String.self)) }
    }

    static func promotionalGrants(
        _ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger
    ) async throws
        -> [PromotionalGrant]
    {
        try await connection.rows(
            "SELECT body FROM promotional_grants WHERE app_id = \(appId) AND app_user_id = \(appUserId) ORDER BY created_at, id",
            logger: logger
        ).compactMap { StoredJSON.decode(PromotionalGrant.self, try $0.value("body", as: String.self)) }
    }

    static func recordAudit(_ connection: PostgresConnection, _ entry: AuditEntry, logger: Logger) async throws {
        try await connection.execute(
            """
            INSERT INTO audit_log (app_id, id, at, body, app_user_id, actor, action)
            VALUES (\(entry.appId), \(entry.id), \(StoredTime.ms(entry.at)), \(StoredJSON.encode(entry)), \(entry.appUserId), \(entry.actor),
                \(entry.action))
            """, logger: logger)
    }
}
