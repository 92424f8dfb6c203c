extension PostgresMigrations {
    /// The SQLite adapter's M0031: when each subscriber's next entitlement lapses, for the sweep.
    static let m0031EntitlementLapses = Migration(
        name: "M0031_EntitlementLapses",
        sql: #"""
            ALTER TABLE entitlement_states ADD COLUMN next_lapse_at BIGINT;
            UPDATE entitlement_states SET next_lapse_at = 0 WHERE body LIKE '%"isActive":true%';
            CREATE INDEX entitlement_states_next_lapse ON entitlement_states (next_lapse_at) WHERE next_lapse_at IS NOT NULL
            """#)
}
