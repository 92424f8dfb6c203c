extension PostgresMigrations {
    /// The SQLite adapter's M0028: operators' named tokens; failed sign-ins and credentials; the audit log's actor and action as
    /// columns.
    static let m0028AdminTokens = Migration(
        name: "M0028_AdminTokens",
        sql: """
            CREATE TABLE admin_tokens (
                id TEXT PRIMARY KEY,
                secret_hash TEXT NOT NULL UNIQUE,
                created_at BIGINT NOT NULL,
                expires_at BIGINT,
                revoked_at BIGINT,
                body TEXT NOT NULL
            );
            CREATE TABLE counted_attempts (
                key TEXT NOT NULL,
                at BIGINT NOT NULL
            );
            CREATE INDEX counted_attempts_key ON counted_attempts (key, at);
            CREATE INDEX counted_attempts_at ON counted_attempts (at);
            ALTER TABLE audit_log ADD COLUMN actor TEXT;
            ALTER TABLE audit_log ADD COLUMN action TEXT;
            UPDATE audit_log SET actor = (body::jsonb)->>'actor', action = (body::jsonb)->>'action'
            """)
}
