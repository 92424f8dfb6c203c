public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: OfferingStore {
    public func offerings(appId: String) async throws -> (offerings: [Offering], targeting: OfferingTargeting) {
        try await read { db in
            let offerings = try String.fetchAll(
                db.cachedStatement(sql: "SELECT body FROM offerings WHERE app_id = ? ORDER BY offering_id"), arguments: [appId]
            ).compactMap { StoredJSON.decode(Offering.self, $0) }
            let targeting = StoredJSON.decode(
                OfferingTargeting.self,
                try String.fetchOne(db.cachedStatement(sql: "SELECT body FROM offering_targeting WHERE app_id = ?"), arguments: [appId]))
            return (offerings, targeting ?? OfferingTargeting())
        }
    }

    public func seedOfferings(appId: String, offerings: [Offering], targeting: OfferingTargeting?, now: Date) async throws {
        try await pool.write { db in
            for offering in offerings { try Self.writeOffering(db, appId: appId, offering: offering, now: now, replace: false) }
            if let targeting { try Self.writeTargeting(db, appId: appId, targeting: targeting, now: now, replace: false) }
        }
    }

    public func upsertOffering(appId: String, offering: Offering, audit: AuditEntry, now: Date) async throws {
        try await pool.write { db in
            try Self.writeOffering(db, appId: appId, offering: offering, now: now, replace: true)
            try Self.recordAudit(db, audit)
        }
    }

    public func deleteOffering(appId: String, offeringId: String, audit: AuditEntry, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM offerings WHERE app_id = ? AND offering_id = ?", arguments: [appId, offeringId])
            guard db.changesCount == 1 else { return false }
            try Self.recordAudit(db, audit)
            return true
        }
    }

    public func saveOfferingTargeting(appId: String, targeting: OfferingTargeting, audit: AuditEntry, now: Date) async throws {
        try await pool.write { db in
            try Self.writeTargeting(db, appId: appId, targeting: targeting, now: now, replace: true)
            try Self.recordAudit(db, audit)
        }
    }

    public func offeringOverride(appId: String, appUserId: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT offering_id FROM offering_overrides WHERE app_id = ? AND app_user_id = ?"),
                arguments: [appId, appUserId])
        }
    }

    public func saveOfferingOverride(
        appId: String, appUserId: String, offeringId: String?, audit: AuditEntry, now: Date
    ) async throws -> Bool {
        try await pool.write { db in
            if let offeringId {
                try db.execute(
                    sql: """
                        INSERT INTO offering_overrides (app_id, app_user_id, offering_id, updated_at) VALUES (?, ?, ?, ?)
                        ON CONFLICT (app_id, app_user_id) DO UPDATE SET offering_id = excluded.offering_id, updated_at = excluded.updated_at
                        """,
                    arguments: [appId, appUserId, offeringId, StoredTime.ms(now)])
            } else {
                try db.execute(sql: "DELETE FROM offering_overrides WHERE app_id = ? AND app_user_id = ?", arguments: [appId, appUserId])
                guard db.changesCount == 1 else { return false }
            }
            try Self.recordAudit(db, audit)
            return true
        }
    }

    static func writeOffering(_ db: Database, appId: String, offering: Offering, now: Date, replace: Bool) throws {
        try writeBody(
            db, table: "offerings", keys: ["app_id": appId, "offering_id": offering.id], body: StoredJSON.encode(offering), now: now,
            replace: replace)
    }

    static func writeTargeting(_ db: Database, appId: String, targeting: OfferingTargeting, now: Date, replace: Bool) throws {
        try writeBody(db, table: "offering_targeting", keys: ["app_id": appId], body: StoredJSON.encode(targeting), now: now, replace: replace)
    }
}
