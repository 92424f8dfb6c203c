extension PostgresMigrations {
    /// Entitlement definitions, promotional grants and the audit log, subscribers' last entitlement states and each transaction's offer (see the SQLite migration of the same name).
    static let m0011Entitlements = Migration(
        name: "M0011_Entitlements",
        sql: """
            ALTER TABLE transactions ADD COLUMN offer_type BIGINT;
            ALTER TABLE transactions ADD COLUMN offer_identifier TEXT;
            ALTER TABLE transactions ADD COLUMN offer_discount_type TEXT;
            ALTER TABLE transactions ADD COLUMN offer_period TEXT;
            CREATE TABLE entitlement_definitions (
                app_id TEXT NOT NULL,
                entitlement_id TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, entitlement_id)
            );
            CREATE TABLE promotional_grants (
                app_id TEXT NOT NULL,
                id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                body TEXT NOT NULL,
                revoked_at BIGINT,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, id)
            );
            CREATE INDEX promotional_grants_user ON promotional_grants (app_id, app_user_id);
            CREATE TABLE audit_log (
                cursor BIGSERIAL PRIMARY KEY,
                app_id TEXT NOT NULL,
                id TEXT NOT NULL UNIQUE,
                at BIGINT NOT NULL,
                body TEXT NOT NULL
            );
            CREATE INDEX audit_log_app ON audit_log (app_id, cursor);
            CREATE TABLE entitlement_states (
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, app_user_id)
            )
            """)
}
