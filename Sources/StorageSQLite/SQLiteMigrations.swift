import GRDB

/// Versioned schema. A released migration is never edited; changes are new migrations.
/// The PostgreSQL adapter mirrors the same tables and constraints.
enum SQLiteMigrations {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("M0001_CreateSchema") { db in
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
        migrator.registerMigration("M0002_ProvisionalGrants") { db in
            try db.execute(
                sql: """
                    CREATE TABLE provisional_grants (
                        app_id TEXT NOT NULL,
                        verification_id TEXT NOT NULL REFERENCES verifications (id),
                        app_user_id TEXT NOT NULL,
                        transaction_id TEXT NOT NULL,
                        original_transaction_id TEXT NOT NULL,
                        product_id TEXT NOT NULL,
                        expires_at INTEGER NOT NULL,
                        created_at INTEGER NOT NULL,
                        PRIMARY KEY (verification_id, transaction_id)
                    );
                    CREATE INDEX provisional_grants_user ON provisional_grants (app_id, app_user_id, expires_at);
                    """)
        }
        migrator.registerMigration("M0003_Notifications") { db in
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
        migrator.registerMigration("M0004_RefundReversals") { db in
            // SQLite cannot change a CHECK constraint: the ledger is rebuilt with the new event,
            // ids and rows kept, in the migration's transaction.
            try db.execute(
                sql: """
                    ALTER TABLE transactions ADD COLUMN reinstated_at INTEGER;
                    CREATE TABLE ledger_m0004 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        app_id TEXT NOT NULL,
                        app_user_id TEXT NOT NULL,
                        product_id TEXT NOT NULL,
                        product_type TEXT NOT NULL,
                        transaction_id TEXT NOT NULL,
                        original_transaction_id TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        purchase_date INTEGER NOT NULL,
                        event TEXT NOT NULL CHECK (event IN ('purchase','refund','refund_reversed')),
                        quantity INTEGER NOT NULL,
                        price_micros INTEGER,
                        currency TEXT,
                        state TEXT NOT NULL,
                        recorded_at INTEGER NOT NULL,
                        UNIQUE (app_id, transaction_id, event)
                    );
                    INSERT INTO ledger_m0004 SELECT * FROM ledger;
                    DROP TABLE ledger;
                    ALTER TABLE ledger_m0004 RENAME TO ledger;
                    CREATE INDEX ledger_period ON ledger (app_id, environment, purchase_date);
                    """)
        }
        migrator.registerMigration("M0005_OwnershipClaims") { db in
            // One accepted_seq per submission (not per row): claims order submissions.
            try db.execute(
                sql: """
                    CREATE TABLE ownership_claims (
                        app_id TEXT NOT NULL,
                        original_transaction_id TEXT NOT NULL,
                        app_user_id TEXT NOT NULL,
                        verification_id TEXT NOT NULL,
                        accepted_seq INTEGER NOT NULL,
                        claimed_at INTEGER NOT NULL,
                        PRIMARY KEY (app_id, original_transaction_id, app_user_id)
                    );
                    CREATE INDEX ownership_claims_sequence ON ownership_claims (accepted_seq);
                    """)
        }
        migrator.registerMigration("M0006_Events") { db in
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
        migrator.registerMigration("M0007_Webhooks") { db in
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
        // Fields of App Store Server API 1.17-1.21: the customer's app transaction id, prorated
        // refunds, monthly plans with a 12-month commitment.
        migrator.registerMigration("M0008_TransactionFields2026") { db in
            try db.execute(
                sql: """
                    ALTER TABLE transactions ADD COLUMN app_transaction_id TEXT;
                    ALTER TABLE transactions ADD COLUMN revocation_type TEXT;
                    ALTER TABLE transactions ADD COLUMN revocation_percentage INTEGER;
                    ALTER TABLE transactions ADD COLUMN billing_plan_type TEXT;
                    ALTER TABLE transactions ADD COLUMN commitment_period_number INTEGER;
                    ALTER TABLE transactions ADD COLUMN commitment_total_periods INTEGER;
                    ALTER TABLE transactions ADD COLUMN commitment_expires_date INTEGER;
                    CREATE INDEX transactions_app_transaction ON transactions (app_id, app_transaction_id);
                    """)
        }
        // Apple's health per endpoint as the worker processes share it.
        migrator.registerMigration("M0009_AppleHealth") { db in
            try db.execute(
                sql: """
                    CREATE TABLE apple_health (
                        endpoint TEXT PRIMARY KEY,
                        state TEXT NOT NULL,
                        since INTEGER NOT NULL
                    );
                    """)
        }
        // Events recorded from now on hold their wire form (WireJSON), sent by webhooks as stored.
        migrator.registerMigration("M0010_EventWireBody") { db in
            try db.execute(sql: "ALTER TABLE events ADD COLUMN wire INTEGER NOT NULL DEFAULT 0")
        }
        return migrator
    }
}
