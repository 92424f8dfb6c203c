extension PostgresMigrations {
    /// The SQLite adapter's M0032: experiments on offerings and their enrollments.
    static let m0032Experiments = Migration(
        name: "M0032_Experiments",
        sql: #"""
            CREATE TABLE experiments (
                app_id TEXT NOT NULL,
                experiment_id TEXT NOT NULL,
                body TEXT NOT NULL,
                created_at BIGINT NOT NULL,
                updated_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, experiment_id)
            );
            CREATE TABLE experiment_enrollments (
                app_id TEXT NOT NULL,
                experiment_id TEXT NOT NULL,
                app_user_id TEXT NOT NULL,
                arm BIGINT NOT NULL,
                offering TEXT NOT NULL,
                enrolled_at BIGINT NOT NULL,
                PRIMARY KEY (app_id, experiment_id, app_user_id)
            );
            CREATE INDEX experiment_enrollments_arm ON experiment_enrollments (app_id, experiment_id, arm, enrolled_at)
            """#)
}
