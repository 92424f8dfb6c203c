public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    public func insertAdminToken(_ token: AdminToken, secretHash: String, audit: AuditEntry) async throws {
        try await pool.write { db in
            try Self.insert(db, token, secretHash: secretHash)
            try Self.recordAudit(db, audit)
        }
    }

    public func adminToken(secretHash: String) async throws -> AdminToken? {
        try await read { db in
            StoredJSON.decode(
                AdminToken.self,
                try String.fetchOne(db.cachedStatement(sql: "SELECT body FROM admin_tokens WHERE secret_hash = ?"), arguments: [secretHash]))
        }
    }

    public func adminToken(id: String) async throws -> AdminToken? {
        try await read { db in
            StoredJSON.decode(AdminToken.self, try String.fetchOne(db, sql: "SELECT body FROM admin_tokens WHERE id = ?", arguments: [id]))
        }
    }

    public func adminTokens() async throws -> [AdminToken] {
        try await read { db in
            try String.fetchAll(db, sql: "SELECT body FROM admin_tokens ORDER BY created_at, id").compactMap {
                StoredJSON.decode(AdminToken.self, $0)
            }
        }
    }

    public func updateAdminToken(
        _ token: AdminToken, activeAt now: Date, audit: AuditEntry, replacement: AdminTokenReplacement?
    )
        async throws -> Bool
    {
        try await pool.write { db in
            try db.execute(
                sql: """
                    UPDATE admin_tokens SET body = ?, expires_at = ?, revoked_at = ?
                    WHERE id = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
                    """,
                arguments: [
                    StoredJSON.encode(token), StoredTime.ms(token.expiresAt), StoredTime.ms(token.revokedAt), token.id,
                    StoredTime.ms(now),
                ])
            guard db.changesCount == 1 else { return false }
            if let replacement { try Self.insert(db, replacement.token, secretHash: replacement.secretHash) }
            try Self.recordAudit(db, audit)
            return true
        }
    }

    public func appendAuditEntry(_ entry: AuditEntry) async throws {
        try await pool.write { db in
            guard try !Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM audit_log WHERE id = ?)", arguments: [entry.id])! else { return }
            try Self.recordAudit(db, entry)
        }
    }

    private static func insert(_ db: Database, _ token: AdminToken, secretHash: String) throws {
        try db.execute(
            sql: "INSERT INTO admin_tokens (id, secret_hash, created_at, expires_at, revoked_at, body) VALUES (?, ?, ?, ?, ?, ?)",
            arguments: [
                token.id, secretHash, StoredTime.ms(token.createdAt), StoredTime.ms(token.expiresAt), StoredTime.ms(token.revokedAt),
                StoredJSON.encode(token),
            ])
    }
}
