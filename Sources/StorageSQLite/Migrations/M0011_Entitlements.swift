import GRDB

extension SQLiteMigrations {
    /// Entitlements: each app's named entitlements (seeded from the configuration, edited through
    /// the admin API), what was last recorded about each subscriber's (to tell entitlement
    /// events), and the offer each transaction was bought with (Apple's `offerType`,
    /// `offerIdentifier`, `offerDiscountType`, `offerPeriod`, or a receipt's trial and offer
    /// fields), which tells a trial from a paid period. Transactions stored before have no offer
    /// recorded (unknown, shown as a normal period).
    static func m0011Entitlements(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE transactions ADD COLUMN offer_type INTEGER;
                ALTER TABLE transactions ADD COLUMN offer_identifier TEXT;
                ALTER TABLE transactions ADD COLUMN offer_discount_type TEXT;
                ALTER TABLE transactions ADD COLUMN offer_period TEXT;
                CREATE TABLE entitlement_definitions (
                    app_id TEXT NOT NULL,
                    entitlement_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, entitlement_id)
                ) WITHOUT ROWID;
                CREATE TABLE entitlement_states (
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, app_user_id)
                ) WITHOUT ROWID;
                """)
    }
}
