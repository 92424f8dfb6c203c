extension PostgresMigrations {
    /// The SQLite adapter's M0019: console sessions signed out before they expire.
    static let m0019ConsoleSignOuts = Migration(
        name: "M0019_ConsoleSignOuts",
        sql: """
            CREATE TABLE console_sign_outs (nonce TEXT PRIMARY KEY, expires_at BIGINT NOT NULL);
            CREATE INDEX console_sign_outs_expiry ON console_sign_outs (expires_at)
            """)
}
