extension PostgresMigrations {
    /// The SQLite adapter's M0026: the win-back offers Apple names in a subscription's renewal info.
    static let m0026WinBackOffers = Migration(
        name: "M0026_WinBackOffers", sql: "ALTER TABLE subscriptions ADD COLUMN win_back_offer_ids TEXT")
}
