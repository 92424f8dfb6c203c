import GRDB

extension SQLiteMigrations {
    /// One experiment of an app not stopped at a time, as a constraint: the stop moves into a
    /// column of its own, and a unique index over the app's unstopped experiments refuses a
    /// second one however two operators race (docs/EXPERIMENTS.md).
    static func m0033OneOpenExperiment(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE experiments ADD COLUMN stopped_at INTEGER")
        try db.execute(sql: "UPDATE experiments SET stopped_at = updated_at WHERE json_extract(body, '$.stoppedAt') IS NOT NULL")
        try db.execute(sql: "CREATE UNIQUE INDEX experiments_one_open ON experiments (app_id) WHERE stopped_at IS NULL")
    }
}
