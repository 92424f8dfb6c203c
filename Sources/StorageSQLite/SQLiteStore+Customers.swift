public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain
import StorekeeperWire

extension SQLiteStore: CustomerStore {
    public func attributes(appId: String, appUserId: String) async throws -> SubscriberAttributes? {
        try await read { db in try Self.attributes(db, appId: appId, appUserId: appUserId) }
    }

    static func attributes(_ db: Database, appId: String, appUserId: String) throws -> SubscriberAttributes? {
        StoredJSON.decode(
            SubscriberAttributes.self,
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT body FROM subscriber_attributes WHERE app_id = ? AND app_user_id = ?"),
                arguments: [appId, appUserId]))
    }

    public func updateAttributes(
        appId: String, appUserId: String, now: Date,
        _ change: @escaping @Sendable (SubscriberAttributes) -> Result<SubscriberAttributes, AttributeProblems>
    ) async throws -> Result<SubscriberAttributes, AttributeProblems> {
        try await write { db in
            let outcome = change(try Self.attributes(db, appId: appId, appUserId: appUserId) ?? SubscriberAttributes())
            guard case .success(let attributes) = outcome else { return outcome }
            if attributes.isEmpty {
                try db.execute(sql: "DELETE FROM subscriber_attributes WHERE app_id = ? AND app_user_id = ?", arguments: [appId, appUserId])
            } else {
                try db.execute(
                    sql: """
                        INSERT INTO subscriber_attributes (app_id, app_user_id, body, updated_at, email) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (app_id, app_user_id) DO UPDATE
                        SET body = excluded.body, updated_at = excluded.updated_at, email = excluded.email
                        """,
                    arguments: [
                        appId, appUserId, StoredJSON.encode(attributes), StoredTime.ms(now), attributes.email.map(CustomerMatch.normalizedEmail),
                    ])
            }
            return outcome
        }
    }

    /// Then the write-ahead log is checkpointed and truncated: it holds the pages as they were
    /// before (the name, the e-mail), and a checkpoint alone leaves them in the file until later
    /// writes overwrite them. Deleted cells are zeroed as they are freed (`secure_delete`, set at
    /// open), so the database file keeps none either. Readers wait for the few milliseconds that
    /// takes; deletions are rare.
    public func deleteCustomer(appId: String, erasure: CustomerErasure, audit: AuditEntry?, now: Date) async throws -> CustomerDeletion? {
        let deletion = try await eraseCustomer(appId: appId, erasure: erasure, audit: audit)
        if deletion != nil { _ = try await pool.barrierWriteWithoutTransaction { db in try db.checkpoint(.truncate) } }
        return deletion
    }

    private func eraseCustomer(appId: String, erasure: CustomerErasure, audit: AuditEntry?) async throws -> CustomerDeletion? {
        try await write { db in
            let user = erasure.appUserId
            var rows: [String: Int] = [:]
            func count(_ table: String) { if db.changesCount > 0 { rows[table, default: 0] += db.changesCount } }
            for table in CustomerTables.renamed {
                try db.execute(
                    sql: "UPDATE \(table) SET app_user_id = ? WHERE app_id = ? AND app_user_id = ?", arguments: [erasure.tombstone, appId, user])
                count(table)
            }
            // Hints are the client's words, stored for support: they may name the customer.
            try db.execute(
                sql: "UPDATE verifications SET app_user_id = ?, hints = NULL WHERE app_id = ? AND app_user_id = ?",
                arguments: [erasure.tombstone, appId, user])
            count("verifications")
            // The token is derived from the customer's id: whoever knows the id could find the rows by it.
            try db.execute(
                sql: "UPDATE transactions SET app_account_token = NULL WHERE app_id = ? AND app_user_id = ?",
                arguments: [appId, erasure.tombstone])
            for table in CustomerTables.removed {
                try db.execute(sql: "DELETE FROM \(table) WHERE app_id = ? AND app_user_id = ?", arguments: [appId, user])
                count(table)
            }
            // A spend's key and reason are the caller's words: the key becomes one built from the row.
            var erasure = erasure
            let spends = try Row.fetchAll(
                db, sql: "SELECT cursor, id FROM credit_spends WHERE app_id = ? AND app_user_id = ?", arguments: [appId, erasure.tombstone])
            for row in spends {
                let cursor: Int64 = row["cursor"]
                erasure.spendIds[row["id"]] = CustomerErasure.spendId(cursor: cursor)
                try db.execute(
                    sql: "UPDATE credit_spends SET id = ?, reason = ? WHERE cursor = ?",
                    arguments: [CustomerErasure.spendId(cursor: cursor), CustomerErasure.erasedText, cursor])
            }
            if let suspension = try Self.suspension(db, appId: appId, appUserId: erasure.tombstone) {
                try db.execute(
                    sql: "UPDATE access_suspensions SET body = ? WHERE app_id = ? AND app_user_id = ?",
                    arguments: [StoredJSON.encode(erasure.erase(suspension)), appId, erasure.tombstone])
            }
            for grant in try Self.promotionalGrants(db, appId: appId, appUserId: user) {
                try db.execute(
                    sql: "UPDATE promotional_grants SET app_user_id = ?, body = ? WHERE app_id = ? AND id = ?",
                    arguments: [erasure.tombstone, StoredJSON.encode(erasure.erase(grant)), appId, grant.id])
                count("promotional_grants")
            }
            // Events of the customer, and other users' that name them (a transfer, an owner).
            let mentions = CustomerTables.mentions(of: user)
            let events = try Row.fetchAll(
                db,
                sql: """
                    SELECT cursor, id, body, wire FROM events
                    WHERE app_id = ? AND (app_user_id = ? OR instr(body, ?) > 0 OR instr(body, ?) > 0)
                    """, arguments: [appId, user, mentions[0], mentions[1]])
            for row in events {
                let id: String = row["id"]
                guard let event = StoredEventBody.event(body: row["body"], wire: row["wire"]) else { continue }
                let erased = erasure.erase(event, cursor: row["cursor"])
                try db.execute(
                    sql: "UPDATE events SET id = ?, app_user_id = ?, body = ?, wire = 1 WHERE app_id = ? AND cursor = ?",
                    arguments: [erased.id, erased.appUserId, WireJSON.encode(erased), appId, row["cursor"] as Int64])
                count("events")
                if erased.id != id {
                    try db.execute(sql: "UPDATE webhook_deliveries SET event_id = ? WHERE event_id = ?", arguments: [erased.id, id])
                }
            }
            let entries = try Row.fetchAll(
                db, sql: "SELECT cursor, body FROM audit_log WHERE app_id = ? AND (instr(body, ?) > 0 OR instr(body, ?) > 0)",
                arguments: [appId, mentions[0], mentions[1]])
            for row in entries {
                guard let entry = StoredJSON.decode(AuditEntry.self, row["body"]), entry.appUserId == user else { continue }
                let erased = erasure.erase(entry)
                try db.execute(
                    sql: "UPDATE audit_log SET body = ?, app_user_id = ? WHERE cursor = ?",
                    arguments: [StoredJSON.encode(erased), erased.appUserId, row["cursor"] as Int64])
                count("audit_log")
            }
            guard !rows.isEmpty else { return nil }
            if let audit { try Self.recordAudit(db, audit) }
            return CustomerDeletion(tombstone: erasure.tombstone, rows: rows)
        }
    }

    public func suspension(appId: String, appUserId: String) async throws -> AccessSuspension? {
        try await read { db in try Self.suspension(db, appId: appId, appUserId: appUserId) }
    }

    static func suspension(_ db: Database, appId: String, appUserId: String) throws -> AccessSuspension? {
        StoredJSON.decode(
            AccessSuspension.self,
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT body FROM access_suspensions WHERE app_id = ? AND app_user_id = ?"), arguments: [appId, appUserId]))
    }

    public func suspendAccess(
        appId: String, appUserId: String, suspension: AccessSuspension, audit: AuditEntry, events: EventBatch, now: Date
    ) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO access_suspensions (app_id, app_user_id, body, since) VALUES (?, ?, ?, ?)
                    ON CONFLICT (app_id, app_user_id) DO NOTHING
                    """, arguments: [appId, appUserId, StoredJSON.encode(suspension), StoredTime.ms(suspension.since)])
            guard db.changesCount == 1 else { return false }
            try Self.recordAudit(db, audit)
            try Self.record(events, db: db, now: now)
            return true
        }
    }

    public func restoreAccess(appId: String, appUserId: String, audit: AuditEntry, events: EventBatch, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM access_suspensions WHERE app_id = ? AND app_user_id = ?", arguments: [appId, appUserId])
            guard db.changesCount == 1 else { return false }
            try Self.recordAudit(db, audit)
            try Self.record(events, db: db, now: now)
            return true
        }
    }

    public func tablesMentioning(_ text: String) async throws -> [String: Int] {
        try await read { db in
            var found: [String: Int] = [:]
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
            for table in tables {
                let columns = try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]).map { $0["name"] as String }
                guard !columns.isEmpty else { continue }
                // Any column: SQLite stores text in columns of any declared type.
                let condition = columns.map { "instr(CAST(\"\($0)\" AS TEXT), ?) > 0" }.joined(separator: " OR ")
                let count =
                    try Int.fetchOne(
                        db, sql: "SELECT count(*) FROM \"\(table)\" WHERE \(condition)", arguments: StatementArguments(columns.map { _ in text }))
                    ?? 0
                if count > 0 { found[table] = count }
            }
            return found
        }
    }

    public func customerMatches(appId: String, text: String, limit: Int) async throws -> [CustomerMatch] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT app_user_id, 'transactionId' AS field FROM transactions WHERE app_id = ? AND transaction_id = ?
                        UNION SELECT app_user_id, 'originalTransactionId' FROM transactions
                            WHERE app_id = ? AND original_transaction_id = ?
                        UNION SELECT app_user_id, 'appAccountToken' FROM transactions WHERE app_id = ? AND app_account_token = ?
                        UNION SELECT app_user_id, 'email' FROM subscriber_attributes WHERE app_id = ? AND email = ?
                        ORDER BY 1, 2 LIMIT ?
                        """),
                arguments: [
                    appId, text, appId, text, appId, text.lowercased(), appId, CustomerMatch.normalizedEmail(text), limit,
                ]
            ).compactMap { row in
                CustomerMatch.Field(rawValue: row["field"]).map { CustomerMatch(appUserId: row["app_user_id"], field: $0) }
            }
        }
    }

    public func verifications(appId: String, appUserId: String, limit: Int) async throws -> [VerificationRecord] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM verifications WHERE app_id = ? AND app_user_id = ?
                        ORDER BY created_at DESC, id DESC LIMIT ?
                        """),
                arguments: [appId, appUserId, limit]
            ).map(Self.verification(from:))
        }
    }
}
