extension PostgresMigrations {
    /// Transactions granted and ledger rows booked by an import of existing customers are marked
    /// (the SQLite adapter's M0014).
    static let m0014ImportedRows = Migration(
        name: "M0014_ImportedRows",
        sql: """
            ALTER TABLE transactions ADD COLUMN imported BOOLEAN NOT NULL DEFAULT FALSE;
            ALTER TABLE ledger ADD COLUMN imported BOOLEAN NOT NULL DEFAULT FALSE
            """)
}
