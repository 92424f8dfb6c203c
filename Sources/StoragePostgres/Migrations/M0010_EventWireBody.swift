import StorekeeperWire

extension PostgresMigrations {
    /// Events recorded from now on hold their wire form (WireJSON), sent by webhooks as stored.
    static let m0010EventWireBody = Migration(name: "M0010_EventWireBody", sql: "ALTER TABLE events ADD COLUMN wire BOOLEAN NOT NULL DEFAULT FALSE")
}
