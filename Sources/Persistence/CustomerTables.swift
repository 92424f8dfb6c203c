/// The tables that name a customer by app user id, for the adapters' deletion (one list, so
/// both backends and the test that checks every table agree).
public enum CustomerTables {
    /// Rows kept with the id replaced: purchases, money and their history.
    public static let renamed = [
        "transactions", "subscriptions", "ledger", "ownership_bindings", "ownership_claims", "provisional_grants", "webhook_deliveries",
        "event_sequences", "entitlement_states", "access_suspensions",
    ]
    /// Rows removed: the customer's own data and settings.
    public static let removed = ["subscriber_attributes", "offering_overrides"]
    /// Besides those, rewritten row by row: `verifications` (hints cleared), `promotional_grants`,
    /// `events` and `audit_log` (bodies that name them).
    public static let rewritten = ["verifications", "promotional_grants", "events", "audit_log"]

    /// How an app user id appears inside a stored JSON body, in either dialect.
    public static func mentions(of appUserId: String) -> [String] {
        [WireJSON.encode(appUserId), StoredJSON.encode(appUserId)]
    }
}
