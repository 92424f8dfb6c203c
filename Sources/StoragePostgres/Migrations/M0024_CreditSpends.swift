extension PostgresMigrations {
    /// The SQLite adapter's M0024: credits spent, one row per idempotency key of an app.
    static let m0024CreditSpends = Migration(
        name: "M0024_CreditSpends",
        sql: """
            CREATE TABLE credit_spends (
                cursor BIGSERIAL PRIMARY KEY, app_id TEXT NOT NULL, id TEXT NOT NULL, app_user_id TEXT NOT NULL, amount BIGINT NOT NULL,
                reason TEXT NOT NULL, spent_at BIGINT NOT NULL, balance_after BIGINT NOT NULL, UNIQUE (app_id, id));
            CREATE INDEX credit_spends_user ON credit_spends (app_id, app_user_id, cursor)
            """)
}
