import GRDB

extension SQLiteMigrations {
    /// Subscription figures (docs/ANALYTICS.md) read an app's transactions of one environment up
    /// to an instant, and its subscriptions of one environment: each through an index.
    static func m0016AnalyticsIndexes(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE INDEX transactions_period ON transactions (app_id, environment, purchase_date);
                CREATE INDEX subscriptions_environment ON subscriptions (app_id, environment);
                """)
    }
}
