import GRDB

extension SQLiteMigrations {
    /// Apple's `eligibleWinBackOfferIds` from a subscription's latest renewal info (a JSON array
    /// of offer ids), so the app can be told which win-back offers its lapsed user may take.
    static func m0026WinBackOffers(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE subscriptions ADD COLUMN win_back_offer_ids TEXT")
    }
}
