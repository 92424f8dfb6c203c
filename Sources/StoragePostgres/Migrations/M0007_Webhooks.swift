extension PostgresMigrations {
    static let m0007Webhooks = Migration(
        name: "M0007_Webhooks",
        sql: """
            CREATE TABLE webhook_endpoints (
                id TEXT PRIMARY KEY,
                app_id TEXT NOT NULL,
                state TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL
            );
            CREATE INDEX webhook_endpoints_app ON webhook_endpoints (app_id);
            CREATE TABLE webhook_deliveries (
                id TEXT PRIMARY KEY,
                app_id TEXT NOT NULL,
                endpoint_id TEXT NOT NULL,
                event_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                sequence BIGINT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('pending','delivered','dead')),
                attempts BIGINT NOT NULL,
                next_attempt_at BIGINT,
                first_attempt_at BIGINT,
                last_status BIGINT,
                last_error TEXT,
                job_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                UNIQUE (endpoint_id, event_id)
            );
            CREATE INDEX webhook_deliveries_order ON webhook_deliveries (endpoint_id, app_user_id, sequence);
            CREATE INDEX webhook_deliveries_job ON webhook_deliveries (job_id);
            CREATE TABLE webhook_attempts (
                delivery_id TEXT NOT NULL,
                attempt BIGINT NOT NULL,
                at BIGINT NOT NULL,
                status BIGINT,
                latency_ms BIGINT NOT NULL,
                error TEXT,
                response_excerpt TEXT,
                PRIMARY KEY (delivery_id, attempt)
            );
            """)
}
