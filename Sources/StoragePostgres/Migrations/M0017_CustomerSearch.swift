extension PostgresMigrations {
    /// The SQLite adapter's M0017: a transaction's `appAccountToken`, a customer's e-mail as
    /// searched (filled from the stored attributes), and a customer's verifications and audit
    /// entries, each through an index (docs/CONSOLE.md).
    static let m0017CustomerSearch = Migration(
        name: "M0017_CustomerSearch",
        sql: """
            ALTER TABLE transactions ADD COLUMN app_account_token TEXT;
            CREATE INDEX transactions_account_token ON transactions (app_id, app_account_token);
            ALTER TABLE subscriber_attributes ADD COLUMN email TEXT;
            UPDATE subscriber_attributes SET email = lower(btrim((body::jsonb)->>'email', ' '))
            WHERE (body::jsonb)->>'email' IS NOT NULL;
            CREATE INDEX subscriber_attributes_email ON subscriber_attributes (app_id, email);
            CREATE INDEX verifications_user ON verifications (app_id, app_user_id, created_at);
            ALTER TABLE audit_log ADD COLUMN app_user_id TEXT;
            UPDATE audit_log SET app_user_id = (body::jsonb)->>'appUserId';
            CREATE INDEX audit_log_user ON audit_log (app_id, app_user_id, cursor)
            """)
}
