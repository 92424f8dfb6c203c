import GRDB

extension SQLiteMigrations {
    /// Apple's health per endpoint as the worker processes share it.
    static func m0009AppleHealth(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE apple_health (
                    endpoint TEXT PRIMARY KEY,
                    state TEXT NOT NULL,
                    since INTEGER NOT NULL
                );
                """)
    }
}
