extension PostgresMigrations {
    static let m0009AppleHealth = Migration(
        name: "M0009_AppleHealth",
        sql: """
            CREATE TABLE apple_health (
                endpoint TEXT PRIMARY KEY,
                state TEXT NOT NULL,
                since BIGINT NOT NULL
            )
            """)
}
