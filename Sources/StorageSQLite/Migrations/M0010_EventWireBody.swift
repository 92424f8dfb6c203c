import GRDB
import StorekeeperWire

extension SQLiteMigrations {
    /// Events recorded from now on hold their wire form (WireJSON), sent by webhooks as stored.
    static func m0010EventWireBody(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE events ADD COLUMN wire INTEGER NOT NULL DEFAULT 0")
    }
}
