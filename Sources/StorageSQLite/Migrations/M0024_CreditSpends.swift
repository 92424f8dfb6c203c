import GRDB

extension SQLiteMigrations {
    /// Credits spent (`CreditSpend`): one row per idempotency key of an app, with the balance it
    /// left; a user's balance is their consumables' credits less the sum of these.
    static func m0024CreditSpends(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE credit_spends (
                    cursor INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    amount INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    spent_at INTEGER NOT NULL,
                    balance_after INTEGER NOT NULL,
                    UNIQUE (app_id, id)
                );
                CREATE INDEX credit_spends_user ON credit_spends (app_id, app_user_id, cursor);
                """)
    }
}
