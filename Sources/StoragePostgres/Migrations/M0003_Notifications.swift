extension PostgresMigrations {
    static let m0003Notifications = Migration(
        name: "M0003_Notifications",
        sql: """
            CREATE TABLE notifications (
                app_id TEXT NOT NULL,
                notification_uuid TEXT NOT NULL,
                notification_type TEXT NOT NULL,
                subtype TEXT,
                signed_date BIGINT,
                original_transaction_id TEXT,
                environment TEXT,
                payload TEXT NOT NULL,
                outcome TEXT NOT NULL,
                verification_id TEXT,
                received_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, notification_uuid)
            );
            CREATE INDEX notifications_original ON notifications (app_id, original_transaction_id, signed_date);
            """)
}
