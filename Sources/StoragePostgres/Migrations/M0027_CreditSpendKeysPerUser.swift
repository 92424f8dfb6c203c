extension PostgresMigrations {
    /// The SQLite adapter's M0027: an idempotency key names a spend of one user, not of the app.
    static let m0027CreditSpendKeysPerUser = Migration(
        name: "M0027_CreditSpendKeysPerUser",
        sql: """
            ALTER TABLE credit_spends DROP CONSTRAINT credit_spends_app_id_id_key;
            ALTER TABLE credit_spends ADD CONSTRAINT credit_spends_app_user_key UNIQUE (app_id, app_user_id, id)
            """)
}
