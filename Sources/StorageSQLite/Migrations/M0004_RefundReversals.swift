import GRDB

extension SQLiteMigrations {
    static func m0004RefundReversals(_ db: Database) throws {
        // SQLite cannot change a CHECK constraint: the ledger is rebuilt with the new event,
        // ids and rows kept, in the migration's transaction.
        try db.execute(
            sql: """
                ALTER TABLE transactions ADD COLUMN reinstated_at INTEGER;
                CREATE TABLE ledger_m0004 (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    product_type TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    purchase_date INTEGER NOT NULL,
                    event TEXT NOT NULL CHECK (event IN ('purchase','refund','refund_reversed')),
                    quantity INTEGER NOT NULL,
                    price_micros INTEGER,
                    currency TEXT,
                    state TEXT NOT NULL,
                    recorded_at INTEGER NOT NULL,
                    UNIQUE (app_id, transaction_id, event)
                );
                INSERT INTO ledger_m0004 SELECT * FROM ledger;
                DROP TABLE ledger;
                ALTER TABLE ledger_m0004 RENAME TO ledger;
                CREATE INDEX ledger_period ON ledger (app_id, environment, purchase_date);
                """)
    }
}
