import GRDB

extension SQLiteMigrations {
    /// Fields of App Store Server API 1.17-1.21: the customer's app transaction id, prorated
    /// refunds, monthly plans with a 12-month commitment.
    static func m0008TransactionFields2026(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE transactions ADD COLUMN app_transaction_id TEXT;
                ALTER TABLE transactions ADD COLUMN revocation_type TEXT;
                ALTER TABLE transactions ADD COLUMN revocation_percentage INTEGER;
                ALTER TABLE transactions ADD COLUMN billing_plan_type TEXT;
                ALTER TABLE transactions ADD COLUMN commitment_period_number INTEGER;
                ALTER TABLE transactions ADD COLUMN commitment_total_periods INTEGER;
                ALTER TABLE transactions ADD COLUMN commitment_expires_date INTEGER;
                CREATE INDEX transactions_app_transaction ON transactions (app_id, app_transaction_id);
                """)
    }
}
