import GRDB

extension SQLiteMigrations {
    /// Experiments on offerings (their definition as JSON, stop included) and each customer's
    /// enrollment, once per experiment (docs/EXPERIMENTS.md).
    static func m0032Experiments(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE experiments (
                    app_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    body TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, experiment_id)
                );
                CREATE TABLE experiment_enrollments (
                    app_id TEXT NOT NULL,
                    experiment_id TEXT NOT NULL,
                    app_user_id TEXT NOT NULL,
                    arm INTEGER NOT NULL,
                    offering TEXT NOT NULL,
                    enrolled_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, experiment_id, app_user_id)
                );
                CREATE INDEX experiment_enrollments_arm ON experiment_enrollments (app_id, experiment_id, arm, enrolled_at);
                """)
    }
}
