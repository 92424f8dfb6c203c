extension PostgresMigrations {
    /// The SQLite adapter's M0022: when Apple signed a subscription's renewal info.
    static let m0022RenewalSignedAt = Migration(
        name: "M0022_RenewalSignedAt", sql: "ALTER TABLE subscriptions ADD COLUMN renewal_signed_at BIGINT")
}
