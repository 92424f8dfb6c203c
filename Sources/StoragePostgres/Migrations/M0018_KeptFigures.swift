extension PostgresMigrations {
    /// The SQLite adapter's M0018: figures kept with each grant (docs/ANALYTICS.md), their day
    /// totals in shards (concurrent grants of one day add to different rows), revenue by day, and
    /// which app and environment has them built.
    static let m0018KeptFigures = Migration(
        name: "M0018_KeptFigures",
        sql: """
            CREATE TABLE metric_contributions (
                id BIGSERIAL PRIMARY KEY,
                app_id TEXT NOT NULL, environment TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,
                key TEXT NOT NULL, at_ms BIGINT NOT NULL, since_ms BIGINT, until_ms BIGINT, amount BIGINT NOT NULL);
            CREATE INDEX metric_contributions_source ON metric_contributions (app_id, source);
            CREATE INDEX metric_contributions_at ON metric_contributions (app_id, environment, kind, at_ms);
            CREATE TABLE metric_days (
                app_id TEXT NOT NULL, environment TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL, day_ms BIGINT NOT NULL,
                shard INTEGER NOT NULL, amount BIGINT NOT NULL,
                PRIMARY KEY (app_id, environment, kind, key, day_ms, shard));
            CREATE TABLE revenue_days (
                app_id TEXT NOT NULL, environment TEXT NOT NULL, day_ms BIGINT NOT NULL, currency TEXT NOT NULL,
                event TEXT NOT NULL, shard INTEGER NOT NULL, rows BIGINT NOT NULL, amount_micros BIGINT NOT NULL,
                proceeds_micros BIGINT NOT NULL, estimated_micros BIGINT NOT NULL,
                PRIMARY KEY (app_id, environment, day_ms, currency, event, shard));
            CREATE TABLE metric_state (
                app_id TEXT NOT NULL, environment TEXT NOT NULL, built_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, environment))
            """)
}
