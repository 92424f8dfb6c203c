extension PostgresMigrations {
    /// The SQLite adapter's M0020: every move of an Apple endpoint's shared health, and
    /// notifications by when they were received.
    static let m0020AppleHealthHistory = Migration(
        name: "M0020_AppleHealthHistory",
        sql: """
            CREATE TABLE apple_health_history (id BIGSERIAL PRIMARY KEY, endpoint TEXT NOT NULL, state TEXT NOT NULL, at BIGINT NOT NULL);
            CREATE INDEX apple_health_history_at ON apple_health_history (at);
            CREATE INDEX notifications_received ON notifications (received_at)
            """)
}
