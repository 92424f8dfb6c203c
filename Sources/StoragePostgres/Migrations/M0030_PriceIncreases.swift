extension PostgresMigrations {
    /// The SQLite adapter's M0030: Apple's `priceIncreaseStatus` from a subscription's renewal info.
    static let m0030PriceIncreases = Migration(
        name: "M0030_PriceIncreases", sql: "ALTER TABLE subscriptions ADD COLUMN price_increase_status BIGINT")
}
