extension PostgresMigrations {
    /// The SQLite adapter's M0029: each customer's app transaction, the newest Apple signed.
    static let m0029AppTransactions = Migration(
        name: "M0029_AppTransactions",
        sql: """
            CREATE TABLE app_transactions (
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                app_transaction_id TEXT NOT NULL,
                signed_date BIGINT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (app_id, app_user_id)
            );
            CREATE INDEX app_transactions_id ON app_transactions (app_id, app_transaction_id)
            """)
}
