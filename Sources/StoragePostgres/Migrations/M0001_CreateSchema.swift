extension PostgresMigrations {
    static let m0001CreateSchema = Migration(
        name: "M0001_CreateSchema",
        sql: """
            CREATE TABLE jobs (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL,
                payload TEXT NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('available','running','completed','discarded','held')),
                attempt BIGINT NOT NULL DEFAULT 0,
                run_at BIGINT NOT NULL,
                lease_token TEXT,
                lease_owner TEXT,
                lease_expires_at BIGINT,
                last_error TEXT,
                created_at BIGINT NOT NULL,
                finalized_at BIGINT,
                CHECK ((state = 'running') = (lease_token IS NOT NULL)),
                CHECK ((state IN ('completed','discarded')) = (finalized_at IS NOT NULL))
            );
            -- Partial indexes: the finished jobs that make up most of the table are never scanned
            -- by the leasing statement.
            CREATE INDEX jobs_due ON jobs (run_at) WHERE state = 'available';
            CREATE INDEX jobs_expiring ON jobs (lease_expires_at) WHERE state = 'running';
            CREATE INDEX jobs_state ON jobs (state);

            CREATE TABLE products (
                app_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                type TEXT NOT NULL,
                status TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, product_id)
            );

            CREATE TABLE receipts (
                app_id TEXT NOT NULL,
                hash TEXT NOT NULL,
                data TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, hash)
            );

            CREATE TABLE verifications (
                id TEXT PRIMARY KEY,
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                receipt_hash TEXT NOT NULL,
                generation BIGINT NOT NULL,
                job_id TEXT NOT NULL UNIQUE REFERENCES jobs (id),
                state TEXT NOT NULL,
                reason TEXT,
                attempts BIGINT NOT NULL DEFAULT 0,
                apple_statuses TEXT NOT NULL DEFAULT '[]',
                environment TEXT,
                next_attempt_at BIGINT,
                config_fingerprint TEXT,
                grant_summary TEXT,
                hints TEXT,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                finalized_at BIGINT,
                FOREIGN KEY (app_id, receipt_hash) REFERENCES receipts (app_id, hash),
                UNIQUE (app_id, receipt_hash, app_user_id, generation)
            );
            CREATE INDEX verifications_state ON verifications (state, created_at);
            CREATE INDEX verifications_app ON verifications (app_id, created_at);

            CREATE TABLE transactions (
                app_id TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                product_type TEXT NOT NULL,
                environment TEXT NOT NULL,
                purchase_date BIGINT NOT NULL,
                original_purchase_date BIGINT,
                expires_date BIGINT,
                cancellation_date BIGINT,
                quantity BIGINT NOT NULL,
                credits BIGINT NOT NULL,
                ownership_type TEXT,
                verification_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, transaction_id)
            );
            CREATE INDEX transactions_user ON transactions (app_id, app_user_id);
            CREATE INDEX transactions_original ON transactions (app_id, original_transaction_id);

            CREATE TABLE ownership_bindings (
                app_id TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                bound_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, original_transaction_id)
            );

            CREATE TABLE subscriptions (
                app_id TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                latest_transaction_id TEXT NOT NULL,
                expires_date BIGINT,
                revoked_at BIGINT,
                auto_renew_enabled BOOLEAN,
                auto_renew_product_id TEXT,
                in_billing_retry BOOLEAN NOT NULL,
                grace_period_expires_date BIGINT,
                expiration_intent TEXT,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, original_transaction_id)
            );
            CREATE INDEX subscriptions_user ON subscriptions (app_id, app_user_id);

            CREATE TABLE ledger (
                id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                product_id TEXT NOT NULL,
                product_type TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                original_transaction_id TEXT NOT NULL,
                environment TEXT NOT NULL,
                purchase_date BIGINT NOT NULL,
                event TEXT NOT NULL CHECK (event IN ('purchase','refund')),
                quantity BIGINT NOT NULL,
                price_micros BIGINT,
                currency TEXT,
                state TEXT NOT NULL,
                recorded_at BIGINT NOT NULL,
                UNIQUE (app_id, transaction_id, event)
            );
            CREATE INDEX ledger_period ON ledger (app_id, environment, purchase_date);
            """)
}
