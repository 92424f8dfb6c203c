public import Foundation
import Persistence
import PostgresNIO

extension PostgresStore {
    public func recordSignOut(nonce: String, expires: Date, now: Date) async throws {
        let logger = self.logger
        let (nowMs, expiresMs) = (StoredTime.ms(now), StoredTime.ms(expires))
        try await transaction { connection in
            try await connection.execute("DELETE FROM console_sign_outs WHERE expires_at <= \(nowMs)", logger: logger)
            try await connection.execute(
                "INSERT INTO console_sign_outs (nonce, expires_at) VALUES (\(nonce), \(expiresMs)) ON CONFLICT (nonce) DO NOTHING", logger: logger)
        }
    }

    public func isSignedOut(nonce: String) async throws -> Bool {
        let logger = self.logger
        return try await read { connection in
            try await !connection.rows("SELECT 1 AS signed_out FROM console_sign_outs WHERE nonce = \(nonce)", logger: logger).isEmpty
        }
    }
}
