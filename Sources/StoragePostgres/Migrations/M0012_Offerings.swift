extension PostgresMigrations {
    /// Offerings, their targeting and users' overrides (see the SQLite migration of the same name).
    static let m0012Offerings = Migration(
        name: "M0012_Offerings",
        sql: """
            CREATE TABLE offerings (
                app_id TEXT NOT NULL,
                offering_id TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, offering_id)
            );
            CREATE TABLE offering_targeting (
                app_id TEXT NOT NULL PRIMARY KEY,
                body TEXT NOT NULL,
                updated_at BIGINT NOT NULL
            );
            CREATE TABLE offering_overrides (
                app_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                offering_id TEXT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, app_user_id)
            );
            """)
}
