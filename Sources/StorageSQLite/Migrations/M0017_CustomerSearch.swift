import GRDB

extension SQLiteMigrations {
    /// Support's search and a customer's page (docs/CONSOLE.md): a transaction's `appAccountToken`
    /// (known from now on, and for older rows when Apple's signed copy comes again), a customer's
    /// e-mail as searched (`CustomerMatch.normalizedEmail`, filled from the stored attributes), and a
    /// customer's verifications and audit entries, each through an index.
    static func m0017CustomerSearch(_ db: Database) throws {
        try db.execute(
            sql: """
                ALTER TABLE transactions ADD COLUMN app_account_token TEXT;
                CREATE INDEX transactions_account_token ON transactions (app_id, app_account_token);
                ALTER TABLE subscriber_attributes ADD COLUMN email TEXT;
                UPDATE subscriber_attributes SET email = lower(trim(json_extract(body, '$.email'), ' '))
                WHERE json_extract(body, '$.email') IS NOT NULL;
                CREATE INDEX subscriber_attributes_email ON subscriber_attributes (app_id, email);
                CREATE INDEX verifications_user ON verifications (app_id, app_user_id, created_at);
                ALTER TABLE audit_log ADD COLUMN app_user_id TEXT;
                UPDATE audit_log SET app_user_id = json_extract(body, '$.appUserId');
                CREATE INDEX audit_log_user ON audit_log (app_id, app_user_id, cursor);
                """)
    }
}
