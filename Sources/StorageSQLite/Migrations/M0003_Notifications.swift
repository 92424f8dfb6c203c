import GRDB

extension SQLiteMigrations {
    static func m0003Notifications(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE notifications (
                    app_id TEXT NOT NULL,
                    notification_uuid TEXT NOT NULL,
                    notification_type TEXT NOT NULL,
                    subtype TEXT,
                    signed_date INTEGER,
                    original_transaction_id TEXT,
                    environment TEXT,
                    payload TEXT NOT NULL,
                    outcome TEXT NOT NULL,
                    verification_id TEXT,
                    received_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, notification_uuid)
                );
                CREATE INDEX notifications_original ON notifications (app_id, original_transaction_id, signed_date);
                """)
    }
}
