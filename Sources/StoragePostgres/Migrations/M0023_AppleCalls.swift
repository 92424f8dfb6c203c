extension PostgresMigrations {
    /// The SQLite adapter's M0023: calls to Apple tallied by endpoint, outcome and minute.
    static let m0023AppleCalls = Migration(
        name: "M0023_AppleCalls",
        sql: """
            CREATE TABLE apple_calls (
                minute BIGINT NOT NULL, endpoint TEXT NOT NULL, outcome TEXT NOT NULL, calls BIGINT NOT NULL, total_ms BIGINT NOT NULL,
                b0 BIGINT NOT NULL, b1 BIGINT NOT NULL, b2 BIGINT NOT NULL, b3 BIGINT NOT NULL, b4 BIGINT NOT NULL, b5 BIGINT NOT NULL, b6 BIGINT NOT NULL, b7 BIGINT NOT NULL, b8 BIGINT NOT NULL, b9 BIGINT NOT NULL, b10 BIGINT NOT NULL,
                PRIMARY KEY (minute, endpoint, outcome))
            """)
}
