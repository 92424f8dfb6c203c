import GRDB

extension SQLiteMigrations {
    /// When Apple signed the renewal info a subscription's renewal fields come from, so one that
    /// arrives late (notifications come in any order) does not undo a newer one.
    static func m0022RenewalSignedAt(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE subscriptions ADD COLUMN renewal_signed_at INTEGER")
    }
}
