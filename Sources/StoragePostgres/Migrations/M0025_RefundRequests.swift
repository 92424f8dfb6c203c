extension PostgresMigrations {
    /// The SQLite adapter's M0025: refund requests and their answers, one row per notification.
    static let m0025RefundRequests = Migration(
        name: "M0025_RefundRequests",
        sql: """
            CREATE TABLE refund_requests (
                app_id TEXT NOT NULL, notification_uuid TEXT NOT NULL, transaction_id TEXT NOT NULL, app_user_id TEXT, state TEXT NOT NULL,
                job_id TEXT, requested_at BIGINT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (app_id, notification_uuid));
            CREATE INDEX refund_requests_job ON refund_requests (job_id);
            CREATE INDEX refund_requests_transaction ON refund_requests (app_id, transaction_id)
            """)
}
