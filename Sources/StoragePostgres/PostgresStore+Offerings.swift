public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: OfferingStore {
    public func offerings(appId: String) async throws -> (offerings: [Offering], targeting: OfferingTargeting) {
        try await read { connection in
            let offerings = try await connection.rows(
                "SELECT body FROM offerings WHERE app_id = \(appId) ORDER BY offering_id", logger: self.logger
            ).compactMap { StoredJSON.decode(Offering.self, try $0.value("body", as: String.self)) }
            let targeting = try await connection.rows("SELECT body FROM offering_targeting WHERE app_id = \(appId)", logger: self.logger)
                .first.flatMap { StoredJSON.decode(OfferingTargeting.self, try $0.value("body", as: String.self)) }
            return (offerings, targeting ?? OfferingTargeting())
        }
    }

    public func seedOfferings(appId: String, offerings: [Offering], targeting: OfferingTargeting?, now: Date) async throws {
        try await transaction { connection in
            for offering in offerings {
                try await Self.writeOffering(connection, appId: appId, offering: offering, now: now, replace: false, logger: self.logger)
            }
            if let targeting {
                try await Self.writeTargeting(connection, appId: appId, targeting: targeting, now: now, replace: false, logger: self.logger)
            }
        }
    }

    public func upsertOffering(appId: String, offering: Offering, audit: AuditEntry, now: Date) async throws {
        try await transaction { connection in
            try await Self.writeOffering(connection, appId: appId, offering: offering, now: now, replace: true, logger: self.logger)
            try await Self.recordAudit(connection, audit, logger: self.logger)
        }
    }

    public func deleteOffering(appId: String, offeringId: String, audit: AuditEntry, now: Date) async throws -> Bool {
        try await transaction { connection in
            guard
                try await connection.count(
                    "DELETE FROM offerings WHERE app_id = \(appId) AND offering_id = \(offeringId) RETURNING 1", logger: self.logger) == 1
            else { return false }
            try await Self.recordAudit(connection, audit, logger: self.logger)
            return true
        }
    }

    public func saveOfferingTargeting(appId: String, targeting: OfferingTargeting, audit: AuditEntry, now: Date) async throws {
        try await transaction { connection in
            try await Self.writeTargeting(connection, appId: appId, targeting: targeting, now: now, replace: true, logger: self.logger)
            try await Self.recordAudit(connection, audit, logger: self.logger)
        }
    }

    public func offeringOverride(appId: String, appUserId: String) async throws -> String? {
        try await read { connection in
            try await connection.rows(
                "SELECT offering_id FROM offering_overrides WHERE app_id = \(appId) AND app_user_id = \(appUserId)", logger: self.logger
            ).first?.value("offering_id", as: String.self)
        }
    }

    public func saveOfferingOverride(
        appId: String, appUserId: String, offeringId: String?, audit: AuditEntry, now: Date
    ) async throws -> Bool {
        try await transaction { connection in
            if let offeringId {
                try await connection.execute(
                    """
                    INSERT INTO offering_overrides (app_id, app_user_id, offering_id, updated_at)
                    VALUES (\(appId), \(appUserId), \(offeringId), \(StoredTime.ms(now)))
                    ON CONFLICT (app_id, app_user_id) DO UPDATE SET offering_id = excluded.offering_id, updated_at = excluded.updated_at
                    """, logger: self.logger)
            } else {
                guard
                    try await connection.count(
                        "DELETE FROM offering_overrides WHERE app_id = \(appId) AND app_user_id = \(appUserId) RETURNING 1", logger: self.logger)
                        == 1
                else { return false }
            }
            try await Self.recordAudit(connection, audit, logger: self.logger)
            return true
        }
    }

    static func writeOffering(
        _ connection: PostgresConnection, appId: String, offering: Offering, now: Date, replace: Bool, logger: Logger
    ) async throws {
        try await writeBody(
            connection, table: "offerings", keys: ["app_id": appId, "offering_id": offering.id], body: StoredJSON.encode(offering), now: now,
            replace: replace, logger: logger)
    }

    static func writeTargeting(
        _ connection: PostgresConnection, appId: String, targeting: OfferingTargeting, now: Date, replace: Bool, logger: Logger
    ) async throws {
        try await writeBody(
            connection, table: "offering_targeting", keys: ["app_id": appId], body: StoredJSON.encode(targeting), now: now, replace: replace,
            logger: logger)
    }
}
