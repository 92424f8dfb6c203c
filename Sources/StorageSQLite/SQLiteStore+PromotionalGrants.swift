public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: PromotionalGrantStore {
    public func recordPromotionalGrant(
        _ grant: PromotionalGrant, audit: AuditEntry, events: EventBatch, now: Date
    ) async throws -> PromotionalGrant {
        try await write { db in
            // The primary key (app, id) makes a retry a no-op: nothing else is written then.
            try db.cachedStatement(
                sql: """
                    INSERT INTO promotional_grants (app_id, id, app_user_id, body, revoked_at, created_at) VALUES (?, ?, ?, ?, NULL, ?)
                    ON CONFLICT (app_id, id) DO NOTHING
                    """
            ).execute(arguments: [grant.appId, grant.id, grant.appUserId, StoredJSON.encode(grant), StoredTime.ms(now)])
            guard db.changesCount == 1 else {
                return try Self.promotionalGrant(db, appId: grant.appId, grantId: grant.id) ?? grant
            }
            try Self.recordAudit(db, audit)
            try Self.record(events, db: db, now: now)
            return grant
        }
    }

    public func revokePromotionalGrant(
        appId: String, grantId: String, at: Date, audit: AuditEntry, events: @escaping @Sendable (PromotionalGrant) -> EventBatch, now: Date
    ) async throws -> (grant: PromotionalGrant, revoked: Bool)? {
        try await write { db in
            guard var grant = try Self.promotionalGrant(db, appId: appId, grantId: grantId) else { return nil }
            guard grant.revokedAt == nil else { return (grant, false) }
            grant.revokedAt = at
            // Guarded by the state read: only a grant still not revoked is revoked, once.
            try db.cachedStatement(
                sql: "UPDATE promotional_grants SET body = ?, revoked_at = ? WHERE app_id = ? AND id = ? AND revoked_at IS NULL"
            ).execute(arguments: [StoredJSON.encode(grant), StoredTime.ms(at), appId, grantId])
            guard db.changesCount == 1 else { return (try Self.promotionalGrant(db, appId: appId, grantId: grantId) ?? grant, false) }
            try Self.recordAudit(db, audit)
            try Self.record(events(grant), db: db, now: now)
            return (grant, true)
        }
    }

    public func promotionalGrant(appId: String, grantId: String) async throws -> PromotionalGrant? {
        try await read { db in try Self.promotionalGrant(db, appId: appId, grantId: grantId) }
    }

    public func promotionalGrants(appId: String, appUserId: String) async throws -> [PromotionalGrant] {
        try await read { db in try Self.promotionalGrants(db, appId: appId, appUserId: appUserId) }
    }

    public func auditEntries(matching query: AuditQuery) async throws -> [RecordedAuditEntry] {
        var conditions = ["cursor > ?"]
        var arguments: [(any DatabaseValueConvertible)?] = [query.after]
        if let apps = query.appIds {
            conditions.append("app_id IN (\(apps.map { _ in "?" }.joined(separator: ", ")))")
            arguments += apps
        }
        for (column, value) in [("actor", query.actor), ("action", query.action), ("app_user_id", query.appUserId)] {
            guard let value else { continue }
            conditions.append("\(column) = ?")
            arguments.append(value)
        }
        if let since = query.since {
            conditions.append("at >= ?")
            arguments.append(StoredTime.ms(since) as Int64)
        }
        if let until = query.until {
            conditions.append("at < ?")
            arguments.append(StoredTime.ms(until) as Int64)
        }
        arguments.append(query.limit)
        let sql = "SELECT cursor, body FROM audit_log WHERE \(conditions.joined(separator: " AND ")) ORDER BY cursor LIMIT ?"
        let statementArguments = StatementArguments(arguments)
        return try await read { db in
            try Row.fetchAll(db, sql: sql, arguments: statementArguments)
                .compactMap { row in StoredJSON.decode(AuditEntry.self, row["body"]).map { RecordedAuditEntry(cursor: row["cursor"], entry: $0) } }
        }
    }

    public func auditEntries(appId: String, appUserId: String, limit: Int) async throws -> [RecordedAuditEntry] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT cursor, body FROM audit_log WHERE app_id = ? AND app_user_id = ? ORDER BY cursor DESC LIMIT ?"),
                arguments: [appId, appUserId, limit]
            ).compactMap { row in StoredJSON.decode(AuditEntry.self, row["body"]).map { RecordedAuditEntry(cursor: row["cursor"], entry: $0) } }
        }
    }

    static func promotionalGrant(_ db: Database, appId: String, grantId: String) throws -> PromotionalGrant? {
        StoredJSON.decode(
            PromotionalGrant.self,
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT body FROM promotional_grants WHERE app_id = ? AND id = ?"), arguments: [appId, grantId]))
    }

    static func promotionalGrants(_ db: Database, appId: String, appUserId: String) throws -> [PromotionalGrant] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT body FROM promotional_grants WHERE app_id = ? AND app_user_id = ? ORDER BY created_at, id"),
            arguments: [appId, appUserId]
        ).compactMap { StoredJSON.decode(PromotionalGrant.self, $0) }
    }

    static func recordAudit(_ db: Database, _ entry: AuditEntry) throws {
        try db.cachedStatement(sql: "INSERT INTO audit_log (app_id, id, at, body, app_user_id, actor, action) VALUES (?, ?, ?, ?, ?, ?, ?)")
            .execute(arguments: [
                entry.appId, entry.id, StoredTime.ms(entry.at), StoredJSON.encode(entry), entry.appUserId, entry.actor, entry.action,
            ])
    }
}
