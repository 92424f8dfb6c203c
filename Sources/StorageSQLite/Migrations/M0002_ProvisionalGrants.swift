import GRDB

extension SQLiteMigrations {
    static func m0002ProvisionalGrants(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE provisional_grants (
                    app_id TEXT NOT NULL,
                    verification_id TEXT NOT NULL REFERENCES verifications (id),
                    app_user_id TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    expires_at INTEGER NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (verification_id, transaction_id)
                );
                CREATE INDEX provisional_grants_user ON provisional_grants (app_id, app_user_id, expires_at);
                """)
    }
}
