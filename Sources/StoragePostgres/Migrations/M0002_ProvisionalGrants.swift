extension PostgresMigrations {
    static let m0002ProvisionalGrants = Migration(
        name: "M0002_ProvisionalGrants",
        sql: """
            CREATE TABLE provisional_grants (
                app_id TEXT NOT NULL,
                verification_id TEXT NOT NULL REFERENCES verifications (id),
                app_user_id TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                expires_at BIGINT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (verification_id, transaction_id)
            );
            CREATE INDEX provisional_grants_user ON provisional_grants (app_id, app_user_id, expires_at);
            """)
}
