import GRDB

extension SQLiteMigrations {
    /// When each subscriber's next entitlement lapses by time alone, for the lapse sweep. States
    /// stored before it hold no such instant: those with an active entitlement are due at once,
    /// so the sweep assesses each once and stores the instant.
    static func m0031EntitlementLapses(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE entitlement_states ADD COLUMN next_lapse_at INTEGER")
        try db.execute(sql: #"UPDATE entitlement_states SET next_lapse_at = 0 WHERE body LIKE '%"isActive":true%'"#)
        try db.execute(sql: "CREATE INDEX entitlement_states_next_lapse ON entitlement_states (next_lapse_at) WHERE next_lapse_at IS NOT NULL")
    }
}
