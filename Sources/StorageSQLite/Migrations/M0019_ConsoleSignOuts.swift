import GRDB

extension SQLiteMigrations {
    /// Console sessions signed out before they expire, so every process refuses the cookie (a
    /// session is a signed cookie any process reads; only a sign-out needs to be shared). Each row
    /// is deleted once its session would have expired anyway.
    static func m0019ConsoleSignOuts(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE console_sign_outs (
                    nonce TEXT PRIMARY KEY,
                    expires_at INTEGER NOT NULL
                );
                CREATE INDEX console_sign_outs_expiry ON console_sign_outs (expires_at);
                """)
    }
}
