import GRDB

extension SQLiteMigrations {
    /// Entitlements: each app's named entitlements (seeded from the configuration, edited through
    /// the admin API), operators' promotional grants and their audit log, what was last recorded about each subscriber's (to tell entitlement
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
                CREATE TABLE promotional_grants (
                    app_id TEXT NOT NULL,
                    id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    revoked_at INTEGER,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, id)
                ) WITHOUT ROWID;
                CREATE INDEX promotional_grants_user ON promotional_grants (app_id, app_user_id);
                CREATE TABLE audit_log (
                    cursor INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    id TEXT NOT NULL UNIQUE,
                    at INTEGER NOT NULL,
                    body TEXT NOT NULL
                );
                CREATE INDEX audit_log_app ON audit_log (app_id, cursor);
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
