extension PostgresMigrations {
    /// Customers' attributes, access suspensions and aliases (see the SQLite migration of the same name).
    static let m0013Customers = Migration(
        name: "M0013_Customers",
        sql: """
            CREATE TABLE subscriber_attributes (
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, app_user_id)
            );
            CREATE TABLE access_suspensions (
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                body TEXT NOT NULL,
                since BIGINT NOT NULL,
                PRIMARY KEY (app_id, app_user_id)
            );
            CREATE TABLE aliases (
                app_id TEXT NOT NULL,
                alias_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, alias_id)
            );
            CREATE INDEX aliases_user ON aliases (app_id, app_user_id);
            """)
}
