import GRDB

extension SQLiteMigrations {
    /// An idempotency key names a spend of one user, not of the whole app: another user can no
    /// longer take the key a user's spend will use, nor learn that it exists. SQLite cannot change
    /// a table's constraint, so the table is rebuilt with its rows, cursors included.
    static func m0027CreditSpendKeysPerUser(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE credit_spends_per_user (
                    cursor INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    amount INTEGER NOT NULL,
                    reason TEXT NOT NULL,
                    spent_at INTEGER NOT NULL,
                    balance_after INTEGER NOT NULL,
                    UNIQUE (app_id, app_user_id, id)
                );
                INSERT INTO credit_spends_per_user (cursor, app_id, id, app_user_id, amount, reason, spent_at, balance_after)
                    SELECT cursor, app_id, id, app_user_id, amount, reason, spent_at, balance_after FROM credit_spends;
                DROP TABLE credit_spends;
                ALTER TABLE credit_spends_per_user RENAME TO credit_spends;
                CREATE INDEX credit_spends_user ON credit_spends (app_id, app_user_id, cursor);
                """)
    }
}
