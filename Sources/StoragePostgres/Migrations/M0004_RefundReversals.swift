extension PostgresMigrations {
    static let m0004RefundReversals = Migration(
        name: "M0004_RefundReversals",
        sql: """
            ALTER TABLE transactions ADD COLUMN reinstated_at BIGINT;
            ALTER TABLE ledger DROP CONSTRAINT ledger_event_check;
            ALTER TABLE ledger ADD CONSTRAINT ledger_event_check CHECK (event IN ('purchase','refund','refund_reversed'));
            """)
}
