import GRDB

extension SQLiteMigrations {
    /// Customers: what the app's backend says about each (e-mail, name, custom keys), and whose
    /// access is withheld (a parent's withdrawn consent, an operator), and the anonymous ids linked to
    /// the known users they became.
    static func m0013Customers(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE subscriber_attributes (
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, app_user_id)
                ) WITHOUT ROWID;
                CREATE TABLE access_suspensions (
                    app_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    since INTEGER NOT NULL,
                    PRIMARY KEY (app_id, app_user_id)
                ) WITHOUT ROWID;
                CREATE TABLE aliases (
                    app_id TEXT NOT NULL,
                    alias_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, alias_id)
                ) WITHOUT ROWID;
                CREATE INDEX aliases_user ON aliases (app_id, app_user_id);
                """)
    }
}
