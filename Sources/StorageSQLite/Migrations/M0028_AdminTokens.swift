import GRDB

extension SQLiteMigrations {
    /// Operators' named tokens, by their secret's hash; failed sign-ins and admin credentials
    /// where every process counts them; the audit log's actor and action as
    /// columns, so it can be filtered.
    static func m0028AdminTokens(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE admin_tokens (
                    id TEXT PRIMARY KEY,
                    secret_hash TEXT NOT NULL UNIQUE,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER,
                    revoked_at INTEGER,
                    body TEXT NOT NULL
                );
                CREATE TABLE counted_attempts (
                    key TEXT NOT NULL,
                    at INTEGER NOT NULL
                );
                CREATE INDEX counted_attempts_key ON counted_attempts (key, at);
                CREATE INDEX counted_attempts_at ON counted_attempts (at);
                ALTER TABLE audit_log ADD COLUMN actor TEXT;
                ALTER TABLE audit_log ADD COLUMN action TEXT;
                UPDATE audit_log SET actor = json_extract(body, '$.actor'), action = json_extract(body, '$.action');
                """)
    }
}
