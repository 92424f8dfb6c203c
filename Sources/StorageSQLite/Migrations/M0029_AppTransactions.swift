import GRDB

extension SQLiteMigrations {
    /// Each customer's app transaction as the app last posted it (the newest Apple signed), for
    /// the original app version and Apple's id of the customer's account.
    static func m0029AppTransactions(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE app_transactions (
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    app_transaction_id TEXT NOT NULL,
                    signed_date INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    PRIMARY KEY (app_id, app_user_id)
                );
                CREATE INDEX app_transactions_id ON app_transactions (app_id, app_transaction_id);
                """)
    }
}
