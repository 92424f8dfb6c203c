extension PostgresMigrations {
    static let m0008TransactionFields2026 = Migration(
        name: "M0008_TransactionFields2026",
        sql: """
            ALTER TABLE transactions ADD COLUMN app_transaction_id TEXT;
            ALTER TABLE transactions ADD COLUMN revocation_type TEXT;
            ALTER TABLE transactions ADD COLUMN revocation_percentage BIGINT;
            ALTER TABLE transactions ADD COLUMN billing_plan_type TEXT;
            ALTER TABLE transactions ADD COLUMN commitment_period_number BIGINT;
            ALTER TABLE transactions ADD COLUMN commitment_total_periods BIGINT;
            ALTER TABLE transactions ADD COLUMN commitment_expires_date BIGINT;
            CREATE INDEX transactions_app_transaction ON transactions (app_id, app_transaction_id)
            """)
}
