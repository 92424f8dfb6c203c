import GRDB

extension SQLiteMigrations {
    static func m0001CreateSchema(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE jobs (
                    id TEXT PRIMARY KEY,
                    kind TEXT NOT NULL,
                    payload TEXT NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('available','running','completed','discarded','held')),
                    attempt INTEGER NOT NULL DEFAULT 0,
                    run_at INTEGER NOT NULL,
                    lease_token TEXT,
                    lease_owner TEXT,
                    lease_expires_at INTEGER,
                    last_error TEXT,
                    created_at INTEGER NOT NULL,
                    finalized_at INTEGER,
                    CHECK ((state = 'running') = (lease_token IS NOT NULL)),
                    CHECK ((state IN ('completed','discarded')) = (finalized_at IS NOT NULL))
                );
                CREATE INDEX jobs_available ON jobs (state, run_at);
                CREATE INDEX jobs_leases ON jobs (state, lease_expires_at);

                CREATE TABLE products (
                    app_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    status TEXT NOT NULL,
                    body TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, product_id)
                );

                CREATE TABLE receipts (
                    app_id TEXT NOT NULL,
                    hash TEXT NOT NULL,
                    data TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, hash)
                );

                CREATE TABLE verifications (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    receipt_hash TEXT NOT NULL,
                    generation INTEGER NOT NULL,
                    job_id TEXT NOT NULL UNIQUE REFERENCES jobs (id),
                    state TEXT NOT NULL,
                    reason TEXT,
                    attempts INTEGER NOT NULL DEFAULT 0,
                    apple_statuses TEXT NOT NULL DEFAULT '[]',
                    environment TEXT,
                    next_attempt_at INTEGER,
                    config_fingerprint TEXT,
                    grant_summary TEXT,
                    hints TEXT,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    finalized_at INTEGER,
                    FOREIGN KEY (app_id, receipt_hash) REFERENCES receipts (app_id, hash),
                    UNIQUE (app_id, receipt_hash, app_user_id, generation)
                );
                CREATE INDEX verifications_state ON verifications (state, created_at);

                CREATE TABLE transactions (
                    app_id TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    product_type TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    purchase_date INTEGER NOT NULL,
                    original_purchase_date INTEGER,
                    expires_date INTEGER,
                    cancellation_date INTEGER,
                    quantity INTEGER NOT NULL,
                    credits INTEGER NOT NULL,
                    ownership_type TEXT,
                    verification_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, transaction_id)
                );
                CREATE INDEX transactions_user ON transactions (app_id, app_user_id);
                CREATE INDEX transactions_original ON transactions (app_id, original_transaction_id);

                CREATE TABLE ownership_bindings (
                    app_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    bound_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, original_transaction_id)
                );

                CREATE TABLE subscriptions (
                    app_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    latest_transaction_id TEXT NOT NULL,
                    expires_date INTEGER,
                    revoked_at INTEGER,
                    auto_renew_enabled INTEGER,
                    auto_renew_product_id TEXT,
                    in_billing_retry INTEGER NOT NULL,
                    grace_period_expires_date INTEGER,
                    expiration_intent TEXT,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, original_transaction_id)
                );
                CREATE INDEX subscriptions_user ON subscriptions (app_id, app_user_id);

                CREATE TABLE ledger (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    product_type TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    purchase_date INTEGER NOT NULL,
                    event TEXT NOT NULL CHECK (event IN ('purchase','refund')),
                    quantity INTEGER NOT NULL,
                    price_micros INTEGER,
                    currency TEXT,
                    state TEXT NOT NULL,
                    recorded_at INTEGER NOT NULL,
                    UNIQUE (app_id, transaction_id, event)
                );
                CREATE INDEX ledger_period ON ledger (app_id, environment, purchase_date);
                """)
    }
}
