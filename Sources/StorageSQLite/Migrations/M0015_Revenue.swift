import GRDB

extension SQLiteMigrations {
    /// Revenue as Apple charged it: a transaction keeps its signed price, currency and
    /// storefront; a ledger row says whether its amount is the list price (`estimated`: every
    /// row booked before this, which were all at the catalog's price), the storefront and offer,
    /// the commission taken and the proceeds (unknown for the earlier rows).
    static func m0015Revenue(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE transactions ADD COLUMN price_milliunits INTEGER;
                ALTER TABLE transactions ADD COLUMN price_currency TEXT;
                ALTER TABLE transactions ADD COLUMN storefront TEXT;
                ALTER TABLE ledger ADD COLUMN estimated INTEGER NOT NULL DEFAULT 0;
                UPDATE ledger SET estimated = 1 WHERE price_micros IS NOT NULL;
                ALTER TABLE ledger ADD COLUMN storefront TEXT;
                ALTER TABLE ledger ADD COLUMN offer_type INTEGER;
                ALTER TABLE ledger ADD COLUMN offer_identifier TEXT;
                ALTER TABLE ledger ADD COLUMN offer_discount_type TEXT;
                ALTER TABLE ledger ADD COLUMN offer_period TEXT;
                ALTER TABLE ledger ADD COLUMN commission_rate INTEGER;
                ALTER TABLE ledger ADD COLUMN proceeds_micros INTEGER;
                """)
    }
}
