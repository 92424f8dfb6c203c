import GRDB

extension SQLiteMigrations {
    /// Apple's `priceIncreaseStatus` from a subscription's latest renewal info: whether a higher
    /// price waits for the customer's consent (0) or was agreed (1).
    static func m0030PriceIncreases(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE subscriptions ADD COLUMN price_increase_status INTEGER")
    }
}
