public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain
import StorekeeperWire

extension PostgresStore: CustomerStore {
    public func attributes(appId: String, appUserId: String) async throws -> SubscriberAttributes? {
        try await read { connection in try await Self.attributes(connection, appId: appId, appUserId: appUserId, lock: false, logger: self.logger) }
    }

    static func attributes(
        _ connection: PostgresConnection, appId: String, appUserId: String, lock: Bool, logger: Logger
    ) async throws -> SubscriberAttributes? {
        try await connection.rows(
            "SELECT body FROM subscriber_attributes WHERE app_id = \(appId) AND app_user_id = \(appUserId) \(unescaped: lock ? "FOR UPDATE" : "")",
            logger: logger
        ).first.flatMap { StoredJSON.decode(SubscriberAttributes.self, try $0.value("body", as: String.self)) }
    }

    public func updateAttributes(
        appId: String, appUserId: String, now: Date,
        _ change: @escaping @Sendable (SubscriberAttributes) -> Result<SubscriberAttributes, AttributeProblems>
    ) async throws -> Result<SubscriberAttributes, AttributeProblems> {
        try await transaction { connection in
            // A row to lock even for a first change, so two first changes at once take turns
            // instead of the second overwriting the first's keys.
            try await connection.execute(
                """
                INSERT INTO subscriber_attributes (app_id, app_user_id, body, updated_at)
                VALUES (\(appId), \(appUserId), '{}', \(StoredTime.ms(now))) ON CONFLICT (app_id, app_user_id) DO NOTHING
                """, logger: self.logger)
            let stored = try await Self.attributes(connection, appId: appId, appUserId: appUserId, lock: true, logger: self.logger)
            let outcome = change(stored ?? SubscriberAttributes())
            guard case .success(let attributes) = outcome, !attributes.isEmpty else {
                if case .success = outcome {
                    try await connection.execute(
                        "DELETE FROM subscriber_attributes WHERE app_id = \(appId) AND app_user_id = \(appUserId)", logger: self.logger)
                } else if stored?.isEmpty ?? true {
                    // The placeholder of a refused first change goes.
                    try await connection.execute(
                        "DELETE FROM subscriber_attributes WHERE app_id = \(appId) AND app_user_id = \(appUserId) AND body = '{}'",
                        logger: self.logger)
                }
                return outcome
            }
            try await connection.execute(
                """
                UPDATE subscriber_attributes SET body = \(StoredJSON.encode(attributes)), updated_at = \(StoredTime.ms(now)),
                    email = \(attributes.email.map(CustomerMatch.normalizedEmail))
                WHERE app_id = \(appId) AND app_user_id = \(appUserId)
                """, logger: self.logger)
            return outcome
        }
    }

    public func deleteCustomer(appId: String, erasure: CustomerErasure, audit: AuditEntry?, now: Date) async throws -> CustomerDeletion? {
        try await transaction { connection in
            let logger = self.logger
            let user = erasure.appUserId
            let tombstone = erasure.tombstone
            var rows: [String: Int] = [:]
            func add(_ table: String, _ changed: Int) { if changed > 0 { rows[table, default: 0] += changed } }
            for table in CustomerTables.renamed {
                add(
                    table,
                    try await connection.count(
                        "UPDATE \(unescaped: table) SET app_user_id = \(tombstone) WHERE app_id = \(appId) AND app_user_id = \(user) RETURNING 1",
                        logger: logger))
            }
            // Hints are the client's words, stored for support: they may name the customer.
            add(
                "verifications",
                try await connection.count(
                    """
                    UPDATE verifications SET app_user_id = \(tombstone), hints = NULL WHERE app_id = \(appId) AND app_user_id = \(user)
                    RETURNING 1
                    """, logger: logger))
            // The token is derived from the customer's id: whoever knows the id could find the rows by it.
            try await connection.execute(
                "UPDATE transactions SET app_account_token = NULL WHERE app_id = \(appId) AND app_user_id = \(tombstone)", logger: logger)
            for table in CustomerTables.removed {
                add(
                    table,
                    try await connection.count(
                        "DELETE FROM \(unescaped: table) WHERE app_id = \(appId) AND app_user_id = \(user) RETURNING 1", logger: logger))
            }
            // A spend's key and reason are the caller's words: the key becomes one built from the row.
            var erasure = erasure
            for row in try await connection.rows(
                "SELECT cursor, id FROM credit_spends WHERE app_id = \(appId) AND app_user_id = \(tombstone)", logger: logger)
            {
                let cursor = try row.value("cursor", as: Int64.self)
                let key = try row.value("id", as: String.self)
                erasure.spendIds[key] = CustomerErasure.spendId(cursor: cursor)
                try await connection.execute(
                    """
                    UPDATE credit_spends SET id = \(CustomerErasure.spendId(cursor: cursor)), reason = \(CustomerErasure.erasedText)
                    WHERE cursor = \(cursor)
                    """, logger: logger)
            }
            if let suspension = try await Self.suspension(connection, appId: appId, appUserId: tombstone, logger: logger) {
                try await connection.execute(
                    """
                    UPDATE access_suspensions SET body = \(StoredJSON.encode(erasure.erase(suspension)))
                    WHERE app_id = \(appId) AND app_user_id = \(tombstone)
                    """, logger: logger)
            }
            for grant in try await Self.promotionalGrants(connection, appId: appId, appUserId: user, logger: logger) {
                add(
                    "promotional_grants",
                    try await connection.count(
                        """
                        UPDATE promotional_grants SET app_user_id = \(tombstone), body = \(StoredJSON.encode(erasure.erase(grant)))
                        WHERE app_id = \(appId) AND id = \(grant.id) RETURNING 1
                        """, logger: logger))
            }
            // Events of the customer, and other users' that name them (a transfer, an owner).
            let mentions = CustomerTables.mentions(of: user)
            let events = try await connection.rows(
                """
                SELECT cursor, id, body, wire FROM events
                WHERE app_id = \(appId) AND (app_user_id = \(user) OR strpos(body, \(mentions[0])) > 0 OR strpos(body, \(mentions[1])) > 0)
                """, logger: logger)
            for row in events {
                let id = try row.value("id", as: String.self)
                let cursor = try row.value("cursor", as: Int64.self)
                guard let event = StoredEventBody.event(body: try row.value("body", as: String.self), wire: try row.value("wire", as: Bool.self))
                else { continue }
                let erased = erasure.erase(event, cursor: cursor)
                add(
                    "events",
                    try await connection.count(
                        """
                        UPDATE events SET id = \(erased.id), app_user_id = \(erased.appUserId), body = \(WireJSON.encode(erased)), wire = TRUE
                        WHERE app_id = \(appId) AND cursor = \(cursor) RETURNING 1
                        """, logger: logger))
                if erased.id != id {
                    try await connection.execute("UPDATE webhook_deliveries SET event_id = \(erased.id) WHERE event_id = \(id)", logger: logger)
                }
            }
            let entries = try await connection.rows(
                """
                SELECT cursor, body FROM audit_log
                WHERE app_id = \(appId) AND (strpos(body, \(mentions[0])) > 0 OR strpos(body, \(mentions[1])) > 0)
                """, logger: logger)
            for row in entries {
                guard let entry = StoredJSON.decode(AuditEntry.self, try row.value("body", as: String.self)), entry.appUserId == user else {
                    continue
                }
                let cursor = try row.value("cursor", as: Int64.self)
                let erased = erasure.erase(entry)
                add(
                    "audit_log",
                    try await connection.count(
                        """
                        UPDATE audit_log SET body = \(StoredJSON.encode(erased)), app_user_id = \(erased.appUserId)
                        WHERE cursor = \(cursor) RETURNING 1
                        """, logger: logger))
            }
            guard !rows.isEmpty else { return nil }
            if let audit { try await Self.recordAudit(connection, audit, logger: logger) }
            return CustomerDeletion(tombstone: tombstone, rows: rows)
        }
    }

    public func suspension(appId: String, appUserId: String) async throws -> AccessSuspension? {
        try await read { connection in try await Self.suspension(connection, appId: appId, appUserId: appUserId, logger: self.logger) }
    }

    static func suspension(_ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger) async throws -> AccessSuspension? {
        try await connection.rows("SELECT body FROM access_suspensions WHERE app_id = \(appId) AND app_user_id = \(appUserId)", logger: logger)
            .first.flatMap { StoredJSON.decode(AccessSuspension.self, try $0.value("body", as: String.self)) }
    }

    public func suspendAccess(
        appId: String, appUserId: String, suspension: AccessSuspension, audit: AuditEntry, events: EventBatch, now: Date
    ) async throws -> Bool {
        try await transaction { connection in
            guard
                try await connection.count(
                    """
                    INSERT INTO access_suspensions (app_id, app_user_id, body, since)
                    VALUES (\(appId), \(appUserId), \(StoredJSON.encode(suspension)), \(StoredTime.ms(suspension.since)))
                    ON CONFLICT (app_id, app_user_id) DO NOTHING RETURNING 1
                    """, logger: self.logger) == 1
            else { return false }
            try await Self.recordAudit(connection, audit, logger: self.logger)
            try await Self.record(events, connection: connection, now: now, logger: self.logger)
            return true
        }
    }

    public func restoreAccess(appId: String, appUserId: String, audit: AuditEntry, events: EventBatch, now: Date) async throws -> Bool {
        try await transaction { connection in
            guard
                try await connection.count(
                    "DELETE FROM access_suspensions WHERE app_id = \(appId) AND app_user_id = \(appUserId) RETURNING 1", logger: self.logger) == 1
            else { return false }
            try await Self.recordAudit(connection, audit, logger: self.logger)
            try await Self.record(events, connection: connection, now: now, logger: self.logger)
            return true
        }
    }

    public func tablesMentioning(_ text: String) async throws -> [String: Int] {
        try await read { connection in
            let columns = try await connection.rows(
                """
                SELECT table_name, column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND data_type IN ('text', 'character varying', 'jsonb', 'json')
                ORDER BY table_name, column_name
                """, logger: self.logger)
            var byTable: [String: [String]] = [:]
            for row in columns {
                byTable[try row.value("table_name", as: String.self), default: []].append(try row.value("column_name", as: String.self))
            }
            var found: [String: Int] = [:]
            for (table, names) in byTable {
                let condition = names.map { "strpos(\"\($0)\"::text, $1) > 0" }.joined(separator: " OR ")
                var bindings = PostgresBindings()
                bindings.append(text)
                let rows = try await connection.checkedQuery(
                    PostgresQuery(unsafeSQL: "SELECT count(*) AS n FROM \"\(table)\" WHERE \(condition)", binds: bindings), logger: self.logger
                ).collect()
                let count = try rows.first?.makeRandomAccess().value("n", as: Int64.self) ?? 0
                if count > 0 { found[table] = Int(count) }
            }
            return found
        }
    }

    public func customerMatches(appId: String, text: String, limit: Int) async throws -> [CustomerMatch] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT app_user_id, 'transactionId' AS field FROM transactions WHERE app_id = \(appId) AND transaction_id = \(text)
                UNION SELECT app_user_id, 'originalTransactionId' FROM transactions
                    WHERE app_id = \(appId) AND original_transaction_id = \(text)
                UNION SELECT app_user_id, 'appAccountToken' FROM transactions
                    WHERE app_id = \(appId) AND app_account_token = \(text.lowercased())
                UNION SELECT app_user_id, 'email' FROM subscriber_attributes
                    WHERE app_id = \(appId) AND email = \(CustomerMatch.normalizedEmail(text))
                ORDER BY 1, 2 LIMIT \(limit)
                """, logger: self.logger
            ).compactMap { row -> CustomerMatch? in
                guard let field = CustomerMatch.Field(rawValue: try row.value("field")) else { return nil }
                return CustomerMatch(appUserId: try row.value("app_user_id"), field: field)
            }
        }
    }

    public func verifications(appId: String, appUserId: String, limit: Int) async throws -> [VerificationRecord] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM verifications WHERE app_id = \(appId) AND app_user_id = \(appUserId)
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """, logger: self.logger
            ).map(Self.verification(from:))
        }
    }
}
