import GRDB

extension SQLiteMigrations {
    /// Refund requests (CONSUMPTION_REQUEST) and their answers: one row per notification, the
    /// holder in its own column (the body never names them, so a deletion renames one column).
    static func m0025RefundRequests(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE refund_requests (
                    app_id TEXT NOT NULL,
                    notification_uuid TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    app_user_id TEXT,
                    state TEXT NOT NULL,
                    job_id TEXT,
                    requested_at INTEGER NOT NULL,
                    body TEXT NOT NULL,
                    PRIMARY KEY (app_id, notification_uuid)
                );
                CREATE INDEX refund_requests_job ON refund_requests (job_id);
                CREATE INDEX refund_requests_transaction ON refund_requests (app_id, transaction_id);
                """)
    }
}
