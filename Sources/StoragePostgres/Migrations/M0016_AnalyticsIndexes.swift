extension PostgresMigrations {
    /// The SQLite adapter's M0016: an app's transactions of one environment by purchase date, and
    /// its subscriptions of one environment, each through an index (docs/ANALYTICS.md).
    static let m0016AnalyticsIndexes = Migration(
        name: "M0016_AnalyticsIndexes",
        sql: """
            CREATE INDEX transactions_period ON transactions (app_id, environment, purchase_date);
            CREATE INDEX subscriptions_environment ON subscriptions (app_id, environment)
            """)
}
