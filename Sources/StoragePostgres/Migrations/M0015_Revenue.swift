extension PostgresMigrations {
    /// Revenue as Apple charged it (the SQLite adapter's M0015): the signed price on the
    /// transaction; on the ledger, whether the amount is the list price (every earlier row),
    /// the storefront, the offer, the commission and the proceeds.
    static let m0015Revenue = Migration(
        name: "M0015_Revenue",
        sql: """
            ALTER TABLE transactions ADD COLUMN price_milliunits BIGINT;
            ALTER TABLE transactions ADD COLUMN price_currency TEXT;
            ALTER TABLE transactions ADD COLUMN storefront TEXT;
            ALTER TABLE ledger ADD COLUMN estimated BOOLEAN NOT NULL DEFAULT FALSE;
            UPDATE ledger SET estimated = TRUE WHERE price_micros IS NOT NULL;
            ALTER TABLE ledger ADD COLUMN storefront TEXT;
            ALTER TABLE ledger ADD COLUMN offer_type BIGINT;
            ALTER TABLE ledger ADD COLUMN offer_identifier TEXT;
            ALTER TABLE ledger ADD COLUMN offer_discount_type TEXT;
            ALTER TABLE ledger ADD COLUMN offer_period TEXT;
            ALTER TABLE ledger ADD COLUMN commission_rate BIGINT;
            ALTER TABLE ledger ADD COLUMN proceeds_micros BIGINT
            """)
}
