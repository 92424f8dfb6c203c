import GRDB

extension SQLiteMigrations {
    static func m0006Events(_ db: Database) throws {
        // The outbox. Counters live apart from the events so retention can delete old events
        // without a sequence number or cursor ever being handed out twice.
        try db.execute(
            sql: """
                CREATE TABLE events (
                    app_id TEXT NOT NULL,
                    cursor INTEGER NOT NULL,
                    id TEXT NOT NULL UNIQUE,
                    app_user_id TEXT NOT NULL,
                    sequence INTEGER NOT NULL,
                    type TEXT NOT NULL,
                    recorded_at INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    PRIMARY KEY (app_id, cursor),
                    UNIQUE (app_id, app_user_id, sequence)
                );
                CREATE INDEX events_recorded ON events (recorded_at);
                CREATE TABLE event_sequences (
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    last_sequence INTEGER NOT NULL,
                    PRIMARY KEY (app_id, app_user_id)
                );
                CREATE TABLE event_cursors (
                    app_id TEXT PRIMARY KEY,
                    last_cursor INTEGER NOT NULL
                );
                -- Acceptance order is the verification's rowid now: nothing reads the maximum.
                DROP INDEX IF EXISTS ownership_claims_sequence;
                """)
    }
}
