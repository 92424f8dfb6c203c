extension PostgresMigrations {
    /// The SQLite adapter's M0021: each pull of Apple's notification history and what it found.
    static let m0021GapFillRuns = Migration(
        name: "M0021_GapFillRuns",
        sql: """
            CREATE TABLE gap_fill_runs (
                id BIGSERIAL PRIMARY KEY, app_id TEXT NOT NULL, started_at BIGINT NOT NULL, window_from BIGINT NOT NULL,
                window_to BIGINT NOT NULL, cause TEXT NOT NULL, examined BIGINT NOT NULL, recovered BIGINT NOT NULL,
                duplicates BIGINT NOT NULL, failed BIGINT NOT NULL, pages BIGINT NOT NULL, error TEXT);
            CREATE INDEX gap_fill_runs_started ON gap_fill_runs (started_at)
            """)
}
