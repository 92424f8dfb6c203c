import GRDB

extension SQLiteMigrations {
    /// The health page's history: every move of an Apple endpoint's shared health, kept (the
    /// outages), and notifications found by when they were received.
    static func m0020AppleHealthHistory(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE apple_health_history (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    endpoint TEXT NOT NULL,
                    state TEXT NOT NULL,
                    at INTEGER NOT NULL
                );
                CREATE INDEX apple_health_history_at ON apple_health_history (at);
                CREATE INDEX notifications_received ON notifications (received_at);
                """)
    }
}
