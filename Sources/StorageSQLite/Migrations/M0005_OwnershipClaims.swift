import GRDB

extension SQLiteMigrations {
    static func m0005OwnershipClaims(_ db: Database) throws {
        // One accepted_seq per submission (not per row): claims order submissions.
        try db.execute(
            sql: """
                CREATE TABLE ownership_claims (
                    app_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    verification_id TEXT NOT NULL,
                    accepted_seq INTEGER NOT NULL,
                    claimed_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, original_transaction_id, app_user_id)
                );
                CREATE INDEX ownership_claims_sequence ON ownership_claims (accepted_seq);
                """)
    }
}
