import Foundation
import Logging
import Persistence
import PostgresNIO

/// Versioned schema, the same tables and constraints as the SQLite adapter's. A released
/// migration is never edited; changes are new migrations, applied in order, each once.
enum PostgresMigrations {
    struct Migration: Sendable {
        var name: String
        var sql: String

        /// The extended query protocol takes one statement at a time; the scripts hold no
        /// semicolons except between statements.
        var statements: [String] {
            sql.split(separator: ";").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
        }
    }

    static let all: [Migration] = [
        Migration(
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
                """),
        Migration(
            name: "M0002_ProvisionalGrants",
            sql: """
                CREATE TABLE provisional_grants (
                    app_id TEXT NOT NULL,
                    verification_id TEXT NOT NULL REFERENCES verifications (id),
                    app_user_id TEXT NOT NULL,
                    transaction_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    product_id TEXT NOT NULL,
                    expires_at BIGINT NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (verification_id, transaction_id)
                );
                CREATE INDEX provisional_grants_user ON provisional_grants (app_id, app_user_id, expires_at);
                """),
        Migration(
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
                """),
        Migration(
            name: "M0004_RefundReversals",
            sql: """
                ALTER TABLE transactions ADD COLUMN reinstated_at BIGINT;
                ALTER TABLE ledger DROP CONSTRAINT ledger_event_check;
                ALTER TABLE ledger ADD CONSTRAINT ledger_event_check CHECK (event IN ('purchase','refund','refund_reversed'));
                """),
        Migration(
            name: "M0005_OwnershipClaims",
            sql: """
                CREATE SEQUENCE ownership_claim_seq;
                CREATE TABLE ownership_claims (
                    app_id TEXT NOT NULL,
                    original_transaction_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    verification_id TEXT NOT NULL,
                    accepted_seq BIGINT NOT NULL,
                    claimed_at BIGINT NOT NULL,
                    PRIMARY KEY (app_id, original_transaction_id, app_user_id)
                );
                """),
        Migration(
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
                """),
        Migration(
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
                """),
        Migration(
            name: "M0008_TransactionFields2026",
            sql: """
                ALTER TABLE transactions ADD COLUMN app_transaction_id TEXT;
                ALTER TABLE transactions ADD COLUMN revocation_type TEXT;
                ALTER TABLE transactions ADD COLUMN revocation_percentage BIGINT;
                ALTER TABLE transactions ADD COLUMN billing_plan_type TEXT;
                ALTER TABLE transactions ADD COLUMN commitment_period_number BIGINT;
                ALTER TABLE transactions ADD COLUMN commitment_total_periods BIGINT;
                ALTER TABLE transactions ADD COLUMN commitment_expires_date BIGINT;
                CREATE INDEX transactions_app_transaction ON transactions (app_id, app_transaction_id)
                """),
        Migration(
            name: "M0009_AppleHealth",
            sql: """
                CREATE TABLE apple_health (
                    endpoint TEXT PRIMARY KEY,
                    state TEXT NOT NULL,
                    since BIGINT NOT NULL
                )
                """),
        // Events recorded from now on hold their wire form (WireJSON), sent by webhooks as stored.
        Migration(name: "M0010_EventWireBody", sql: "ALTER TABLE events ADD COLUMN wire BOOLEAN NOT NULL DEFAULT FALSE"),
    ]
}

extension PostgresStore {
    /// A constant key for the advisory lock that serializes migrations across processes
    /// starting at once ("storekeeper migrate" in ASCII-ish hex).
    private static let migrationLockKey: Int64 = 0x5354_4f52_454b_4550

    /// Creates the schema if needed and applies every migration not yet applied, each in its own
    /// transaction under a cluster-wide advisory lock, so many processes may start together.
    public func migrate() async throws {
        let schema = configuration.schema
        try await transaction { connection in
            try await connection.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", logger: logger)
            try await connection.execute(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(schema)"), logger: logger)
            try await connection.execute(
                PostgresQuery(
                    unsafeSQL: "CREATE TABLE IF NOT EXISTS \(schema).schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)"),
                logger: logger)
        }
        for migration in PostgresMigrations.all {
            try await transaction { connection in
                try await connection.execute("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", logger: logger)
                let done = try await connection.count(
                    "SELECT 1 FROM schema_migrations WHERE name = \(migration.name)", logger: logger)
                guard done == 0 else { return }
                for statement in migration.statements {
                    try await connection.execute(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                let now = StoredTime.ms(Date())
                try await connection.execute(
                    "INSERT INTO schema_migrations (name, applied_at) VALUES (\(migration.name), \(now))", logger: logger)
            }
        }
    }

    /// Names of the migrations applied so far, oldest first.
    public func appliedMigrations() async throws -> [String] {
        try await read { connection in
            try await connection.rows("SELECT name FROM schema_migrations ORDER BY name", logger: logger).map {
                try $0.value("name", as: String.self)
            }
        }
    }

    /// Drops this store's schema and everything in it. For tests and benchmarks only.
    public func dropSchema() async throws {
        let schema = configuration.schema
        _ = try await read { connection in
            try await connection.execute(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema) CASCADE"), logger: logger)
        }
    }
}
