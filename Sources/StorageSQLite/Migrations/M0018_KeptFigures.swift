import GRDB

extension SQLiteMigrations {
    /// Figures kept with each grant (docs/ANALYTICS.md, "How the figures are kept"): every
    /// subscription's and consumable's contributions, their day totals, revenue by day, currency
    /// and event, and which app and environment has them built (none yet: the first read builds
    /// them from the history, and a catalog change drops them to be built again).
    static func m0018KeptFigures(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE metric_contributions (
                    id INTEGER PRIMARY KEY,
                    app_id TEXT NOT NULL, environment TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                    key TEXT NOT NULL, at_ms INTEGER NOT NULL, since_ms INTEGER, until_ms INTEGER, amount INTEGER NOT NULL);
                CREATE INDEX metric_contributions_source ON metric_contributions (app_id, source);
                CREATE INDEX metric_contributions_at ON metric_contributions (app_id, environment, kind, at_ms);
                CREATE TABLE metric_days (
                    app_id TEXT NOT NULL, environment TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, day_ms INTEGER NOT NULL,
                    shard INTEGER NOT NULL, amount INTEGER NOT NULL,
                    PRIMARY KEY (app_id, environment, kind, key, day_ms, shard));
                CREATE TABLE revenue_days (
                    app_id TEXT NOT NULL, environment TEXT NOT NULL, day_ms INTEGER NOT NULL, currency TEXT NOT NULL,
                    event TEXT NOT NULL, shard INTEGER NOT NULL, rows INTEGER NOT NULL, amount_micros INTEGER NOT NULL,
                    proceeds_micros INTEGER NOT NULL, estimated_micros INTEGER NOT NULL,
                    PRIMARY KEY (app_id, environment, day_ms, currency, event, shard));
                CREATE TABLE metric_state (
                    app_id TEXT NOT NULL, environment TEXT NOT NULL, built_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, environment));
                """)
    }
}
