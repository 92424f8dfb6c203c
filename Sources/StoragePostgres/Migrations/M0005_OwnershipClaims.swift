extension PostgresMigrations {
    static let m0005OwnershipClaims = Migration(
        name: "M0005_OwnershipClaims",
        sql: """
            CREATE SEQUENCE ownership_claim_seq;
            CREATE TABLE ownership_claims (
                app_id TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                verification_id TEXT NOT NULL,
                accepted_seq BIGINT NOT NULL,
                claimed_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, original_transaction_id, app_user_id)
            );
            """)
}
