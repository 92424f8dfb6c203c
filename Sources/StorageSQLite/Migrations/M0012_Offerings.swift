import GRDB

extension SQLiteMigrations {
    /// Offerings: each app's offerings (seeded from the configuration, edited through the admin
    /// API), its targeting (the default offering and the rules before it) and users' overrides.
    static func m0012Offerings(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE offerings (
                    app_id TEXT NOT NULL,
                    offering_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, offering_id)
                ) WITHOUT ROWID;
                CREATE TABLE offering_targeting (
                    app_id TEXT NOT NULL PRIMARY KEY,
                    body TEXT NOT NULL,
                    updated_at INTEGER NOT NULL
                ) WITHOUT ROWID;
                CREATE TABLE offering_overrides (
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    offering_id TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, app_user_id)
                ) WITHOUT ROWID;
                """)
    }
}
