import GRDB

extension SQLiteMigrations {
    /// Transactions granted and ledger rows booked by an import of existing customers are marked,
    /// so finance tells money that moved before Storekeeper knew the customer from money it saw.
    static func m0014ImportedRows(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE transactions ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE ledger ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
                """)
    }
}
