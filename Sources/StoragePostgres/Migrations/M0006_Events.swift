extension PostgresMigrations {
    static let m0006Events = Migration(
        name: "M0006_Events",
        sql: """
            CREATE TABLE events (
                app_id TEXT NOT NULL,
                cursor BIGINT NOT NULL,
                id TEXT NOT NULL UNIQUE,
                app_user_id TEXT NOT NULL,
                sequence BIGINT NOT NULL,
                type TEXT NOT NULL,
                recorded_at BIGINT NOT NULL,
                body TEXT NOT NULL,
                PRIMARY KEY (app_id, cursor),
                UNIQUE (app_id, app_user_id, sequence)
            );
            CREATE INDEX events_recorded ON events (recorded_at);
            CREATE TABLE event_sequences (
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                last_sequence BIGINT NOT NULL,
                PRIMARY KEY (app_id, app_user_id)
            );
            CREATE TABLE event_cursors (
                app_id TEXT PRIMARY KEY,
                last_cursor BIGINT NOT NULL
            );
            """)
}
