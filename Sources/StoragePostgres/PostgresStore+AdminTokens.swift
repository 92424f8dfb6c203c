public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    public func insertAdminToken(_ token: AdminToken, secretHash: String, audit: AuditEntry) async throws {
        let logger = self.logger
        try await transaction { connection in
            try await Self.insert(connection, token, secretHash: secretHash, logger: logger)
            try await Self.recordAudit(connection, audit, logger: logger)
        }
    }

    public func adminToken(secretHash: String) async throws -> AdminToken? {
        try await tokens("SELECT body FROM admin_tokens WHERE secret_hash = \(secretHash)").first
    }

    public func adminToken(id: String) async throws -> AdminToken? {
        try await tokens("SELECT body FROM admin_tokens WHERE id = \(id)").first
    }

    public func adminTokens() async throws -> [AdminToken] {
        try await tokens("SELECT body FROM admin_tokens ORDER BY created_at, id")
    }

    public func updateAdminToken(
        _ token: AdminToken, activeAt now: Date, audit: AuditEntry, replacement: AdminTokenReplacement?
    )
        async throws -> Bool
    {
        let logger = self.logger
        let (expires, revoked, nowMs) = (StoredTime.ms(token.expiresAt), StoredTime.ms(token.revokedAt), StoredTime.ms(now))
        return try await transaction { connection in
            let updated = try await connection.rows(
                """
                UPDATE admin_tokens SET body = \(StoredJSON.encode(token)), expires_at = \(expires), revoked_at = \(revoked)
                WHERE id = \(token.id) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > \(nowMs))
                RETURNING id
                """, logger: logger)
            guard !updated.isEmpty else { return false }
            if let replacement { try await Self.insert(connection, replacement.token, secretHash: replacement.secretHash, logger: logger) }
            try await Self.recordAudit(connection, audit, logger: logger)
            return true
        }
    }

    public func appendAuditEntry(_ entry: AuditEntry) async throws {
        let logger = self.logger
        try await transaction { connection in
            try await connection.execute(
                """
                INSERT INTO audit_log (app_id, id, at, body, app_user_id, actor, action)
                VALUES (\(entry.appId), \(entry.id), \(StoredTime.ms(entry.at)), \(StoredJSON.encode(entry)), \(entry.appUserId),
                    \(entry.actor), \(entry.action))
                ON CONFLICT (id) DO NOTHING
                """, logger: logger)
        }
    }

    private func tokens(_ query: PostgresQuery) async throws -> [AdminToken] {
        let logger = self.logger
        return try await read { connection in
            try await connection.rows(query, logger: logger).compactMap { StoredJSON.decode(AdminToken.self, try $0.value("body", as: String.self)) }
        }
    }

    private static func insert(_ connection: PostgresConnection, _ token: AdminToken, secretHash: String, logger: Logger) async throws {
        try await connection.execute(
            """
            INSERT INTO admin_tokens (id, secret_hash, created_at, expires_at, revoked_at, body)
            VALUES (\(token.id), \(secretHash), \(StoredTime.ms(token.createdAt)), \(StoredTime.ms(token.expiresAt)),
                \(StoredTime.ms(token.revokedAt)), \(StoredJSON.encode(token)))
            """, logger: logger)
    }
}
