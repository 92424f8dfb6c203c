import GRDB

extension SQLiteMigrations {
    static func m0007Webhooks(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE webhook_endpoints (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    state TEXT NOT NULL,
                    body TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL
                );
                CREATE INDEX webhook_endpoints_app ON webhook_endpoints (app_id);
                CREATE TABLE webhook_deliveries (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    endpoint_id TEXT NOT NULL,
                    event_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    sequence INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending','delivered','dead')),
                    attempts INTEGER NOT NULL,
                    next_attempt_at INTEGER,
                    first_attempt_at INTEGER,
                    last_status INTEGER,
                    last_error TEXT,
                    job_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    UNIQUE (endpoint_id, event_id)
                );
                CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, app_user_id, sequence);
                CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id);
                CREATE TABLE webhook_attempts (
                    delivery_id TEXT NOT NULL,
                    attempt INTEGER NOT NULL,
                    at INTEGER NOT NULL,
                    status INTEGER,
                    latency_ms INTEGER NOT NULL,
                    error TEXT,
                    response_excerpt TEXT,
                    PRIMARY KEY (delivery_id, attempt)
                );
                """)
    }
}
