import StorekeeperWire

/// The tables that name a customer by app user id, for the adapters' deletion (one list, so
/// both backends and the test that checks every table agree).
public enum CustomerTables {
    /// Rows kept with the id replaced: purchases, money and their history.
    public static let renamed = [
        "transactions", "subscriptions", "ledger", "ownership_bindings", "ownership_claims", "provisional_grants", "webhook_deliveries",
        "event_sequences", "entitlement_states", "access_suspensions", "credit_spends",
        "refund_requests", "experiment_enrollments",
    ]
    /// Rows removed: the customer's own data and settings.
    public static let removed = ["subscriber_attributes", "offering_overrides", "aliases", "app_transactions"]
    /// Besides those, rewritten row by row: `verifications` (hints cleared), `promotional_grants`,
    /// `events` and `audit_log` (bodies that name them).
    public static let rewritten = ["verifications", "promotional_grants", "events", "audit_log"]

    /// What an anonymous id's purchases are when it is linked under `transfer`: moved whole.
    public static let transferred = [
        "transactions", "subscriptions", "ledger", "ownership_bindings", "provisional_grants", "credit_spends", "refund_requests",
    ]
    /// Moved only where the known user has no row of their own (theirs wins).
    public static let transferredUnlessPresent = ["subscriber_attributes", "offering_overrides", "access_suspensions", "app_transactions"]

    /// How an app user id appears inside a stored JSON body, in either dialect.
    public static func mentions(of appUserId: String) -> [String] {
        [WireJSON.encode(appUserId), StoredJSON.encode(appUserId)]
    }
}
