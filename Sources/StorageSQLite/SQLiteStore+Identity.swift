public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: IdentityStore {
    public func canonicalId(appId: String, alias: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT app_user_id FROM aliases WHERE app_id = ? AND alias_id = ?"), arguments: [appId, alias])
        }
    }

    public func aliases(appId: String, appUserId: String) async throws -> [String] {
        try await read { db in try Self.aliases(db, appId: appId, appUserId: appUserId) }
    }

    static func aliases(_ db: Database, appId: String, appUserId: String) throws -> [String] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT alias_id FROM aliases WHERE app_id = ? AND app_user_id = ? ORDER BY created_at, alias_id"),
            arguments: [appId, appUserId])
    }

    public func link(
        appId: String, alias: String, to appUserId: String, transfer: Bool, now: Date,
        events: @escaping @Sendable ([TransactionRecord]) -> EventBatch
    ) async throws -> IdentityLink {
        try await write { db in
            let linked = try String.fetchOne(
                db.cachedStatement(sql: "SELECT app_user_id FROM aliases WHERE app_id = ? AND alias_id = ?"), arguments: [appId, alias])
            if let linked, linked != appUserId { return .linkedElsewhere }
            let owned = try Self.transactions(db, appId: appId, appUserId: alias)
            if linked == nil {
                if !transfer, !owned.isEmpty { return .keptWithAnonymous(owned: owned) }
                try db.execute(
                    sql: "INSERT INTO aliases (app_id, alias_id, app_user_id, created_at) VALUES (?, ?, ?, ?)",
                    arguments: [appId, alias, appUserId, StoredTime.ms(now)])
            }
            // Linked before: what was granted to the alias since (a grant under way at the
            // moment of the first link) is swept over now.
            guard transfer else { return linked == nil ? .linked(moved: []) : .alreadyLinked }
            for table in CustomerTables.transferred {
                try db.execute(sql: "UPDATE \(table) SET app_user_id = ? WHERE app_id = ? AND app_user_id = ?", arguments: [appUserId, appId, alias])
            }
            for grant in try Self.promotionalGrants(db, appId: appId, appUserId: alias) {
                var moved = grant
                moved.appUserId = appUserId
                try db.execute(
                    sql: "UPDATE promotional_grants SET app_user_id = ?, body = ? WHERE app_id = ? AND id = ?",
                    arguments: [appUserId, StoredJSON.encode(moved), appId, grant.id])
            }
            // A claim the user holds already stays theirs; the alias's others move.
            try db.execute(
                sql: "UPDATE OR IGNORE ownership_claims SET app_user_id = ? WHERE app_id = ? AND app_user_id = ?",
                arguments: [appUserId, appId, alias])
            try db.execute(sql: "DELETE FROM ownership_claims WHERE app_id = ? AND app_user_id = ?", arguments: [appId, alias])
            // Verifications still to run grant to the user; one the user also holds stays as history.
            try db.execute(
                sql: "UPDATE OR IGNORE verifications SET app_user_id = ? WHERE app_id = ? AND app_user_id = ?", arguments: [appUserId, appId, alias])
            for table in CustomerTables.transferredUnlessPresent {
                try db.execute(
                    sql: "UPDATE OR IGNORE \(table) SET app_user_id = ? WHERE app_id = ? AND app_user_id = ?", arguments: [appUserId, appId, alias])
                try db.execute(sql: "DELETE FROM \(table) WHERE app_id = ? AND app_user_id = ?", arguments: [appId, alias])
            }
            if !owned.isEmpty {
                let moved = owned.map { record in
                    var record = record
                    record.appUserId = appUserId
                    return record
                }
                try Self.record(events(moved), db: db, now: now)
            }
            return linked == nil || !owned.isEmpty ? .linked(moved: owned) : .alreadyLinked
        }
    }
}
