public import Foundation
import GRDB
import Persistence

extension SQLiteStore {
    public func recordSignOut(nonce: String, expires: Date, now: Date) async throws {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM console_sign_outs WHERE expires_at <= ?", arguments: [StoredTime.ms(now)])
            try db.execute(
                sql: "INSERT INTO console_sign_outs (nonce, expires_at) VALUES (?, ?) ON CONFLICT (nonce) DO NOTHING",
                arguments: [nonce, StoredTime.ms(expires)])
        }
    }

    public func isSignedOut(nonce: String) async throws -> Bool {
        try await read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM console_sign_outs WHERE nonce = ?)", arguments: [nonce]) ?? false
        }
    }
}
