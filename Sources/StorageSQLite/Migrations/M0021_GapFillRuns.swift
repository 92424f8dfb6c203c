import GRDB

extension SQLiteMigrations {
    /// Each pull of Apple's notification history (scheduled, or asked by an operator) with what
    /// it found or why it failed: the health page's gap-fill results. Kept 30 days.
    static func m0021GapFillRuns(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE gap_fill_runs (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    started_at INTEGER NOT NULL,
                    window_from INTEGER NOT NULL,
                    window_to INTEGER NOT NULL,
                    cause TEXT NOT NULL,
                    examined INTEGER NOT NULL,
                    recovered INTEGER NOT NULL,
                    duplicates INTEGER NOT NULL,
                    failed INTEGER NOT NULL,
                    pages INTEGER NOT NULL,
                    error TEXT
                );
                CREATE INDEX gap_fill_runs_started ON gap_fill_runs (started_at);
                """)
    }
}
