extension PostgresMigrations {
    /// The SQLite adapter's M0033: one experiment of an app not stopped at a time, as a
    /// constraint.
    static let m0033OneOpenExperiment = Migration(
        name: "M0033_OneOpenExperiment",
        sql: #"""
            ALTER TABLE experiments ADD COLUMN stopped_at BIGINT;
            UPDATE experiments SET stopped_at = updated_at WHERE (body::jsonb)->>'stoppedAt' IS NOT NULL;
            CREATE UNIQUE INDEX experiments_one_open ON experiments (app_id) WHERE stopped_at IS NULL;
            """#)
}
