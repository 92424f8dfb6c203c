import GRDB

extension SQLiteMigrations {
    /// Every call to Apple, tallied by endpoint, outcome and minute with a fixed-bound latency
    /// histogram (`AppleCallTally`): the health page's latency percentiles and status codes over
    /// time, summed over every process. Kept 30 days.
    static func m0023AppleCalls(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE apple_calls (
                    minute INTEGER NOT NULL,
                    endpoint TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    calls INTEGER NOT NULL,
                    total_ms INTEGER NOT NULL,
                    b0 INTEGER NOT NULL,
                    b1 INTEGER NOT NULL,
                    b2 INTEGER NOT NULL,
                    b3 INTEGER NOT NULL,
                    b4 INTEGER NOT NULL,
                    b5 INTEGER NOT NULL,
                    b6 INTEGER NOT NULL,
                    b7 INTEGER NOT NULL,
                    b8 INTEGER NOT NULL,
                    b9 INTEGER NOT NULL,
                    b10 INTEGER NOT NULL,
                    PRIMARY KEY (minute, endpoint, outcome)
                )
                """)
    }
}
