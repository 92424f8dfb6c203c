public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain
import StorekeeperWire

extension SQLiteStore: EventStore {
    public func events(appId: String, after cursor: Int64, types: [EventType], limit: Int) async throws -> [RecordedEvent] {
        try await read { db in
            let filter = types.isEmpty ? "" : "AND type IN (\(placeholders(types.count)))"
            return try Row.fetchAll(
                db,
                sql: "SELECT cursor, body, wire FROM events WHERE app_id = ? AND cursor > ? \(filter) ORDER BY cursor LIMIT ?",
                arguments: [appId, cursor] + StatementArguments(types.map(\.rawValue)) + [limit]
            ).compactMap(Self.recordedEvent(from:))
        }
    }

    public func subscriberEvents(
        appId: String, appUserId: String, afterSequence sequence: Int64, limit: Int
    ) async throws -> [RecordedEvent] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT cursor, body, wire FROM events WHERE app_id = ? AND app_user_id = ? AND sequence > ?
                        ORDER BY sequence LIMIT ?
                        """), arguments: [appId, appUserId, sequence, limit]
            ).compactMap(Self.recordedEvent(from:))
        }
    }

    public func deleteEvents(recordedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await write { db in
            let ids = try String.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT id FROM events e WHERE recorded_at < ?
                          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state != 'delivered')
                        LIMIT ?
                        """), arguments: [StoredTime.ms(cutoff), limit])
            for chunk in ids.chunked(500) {
                let list = placeholders(chunk.count)
                let arguments = StatementArguments(chunk)
                try db.execute(
                    sql: "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id IN (\(list)))",
                    arguments: arguments)
                try db.execute(sql: "DELETE FROM webhook_deliveries WHERE event_id IN (\(list))", arguments: arguments)
                try db.execute(sql: "DELETE FROM events WHERE id IN (\(list))", arguments: arguments)
            }
            return ids.count
        }
    }

    static func recordedEvent(from row: Row) -> RecordedEvent? {
        StoredEventBody.event(body: row["body"], wire: row["wire"]).map { RecordedEvent(cursor: row["cursor"], event: $0) }
    }

    /// Records the batch's events not recorded yet, each with its app user's next sequence
    /// number and its app's next cursor (SQLite's single writer makes both commit-ordered).
    static func record(_ batch: EventBatch, db: Database, now: Date) throws {
        var entitlements: [String: SubscriberView] = [:]
        var endpoints: [String: [WebhookEndpoint]] = [:]
        // The batch's events, then the entitlement events they cause (appended as each
        // subscriber's entitlements are first built).
        var queue = batch.events[...]
        /// The subscriber's view once per batch, assembled with the first of their events as
        /// the trigger; the entitlement events it causes join the queue.
        func assemble(_ event: SubscriberEvent, always: Bool) throws {
            guard entitlements[event.appUserId] == nil else { return }
            let rows = try subscriberRows(db, appId: event.appId, appUserId: event.appUserId, catalog: batch.catalog, now: now)
            let assembly = SubscriberAssembly(rows, now: now, trigger: event)
            if let states = assembly.changedStates ?? (always ? rows.entitlementStates : nil) {
                try storeEntitlementStates(db, appId: event.appId, appUserId: event.appUserId, states: states, now: now)
            }
            entitlements[event.appUserId] = assembly.view
            queue.append(contentsOf: assembly.events)
        }
        while var event = queue.popFirst() {
            if batch.unrecorded.contains(event.id) {
                // Its states are stored even unchanged, so the next lapse moves on.
                try assemble(event, always: true)
                continue
            }
            guard try Row.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM events WHERE id = ?"), arguments: [event.id]) == nil else { continue }
            guard
                let cursor = try Int64.fetchOne(
                    db.cachedStatement(
                        sql: """
                            INSERT INTO event_cursors (app_id, last_cursor) VALUES (?, 1)
                            ON CONFLICT (app_id) DO UPDATE SET last_cursor = last_cursor + 1
                            RETURNING last_cursor
                            """), arguments: [event.appId]),
                let sequence = try Int64.fetchOne(
                    db.cachedStatement(
                        sql: """
                            INSERT INTO event_sequences (app_id, app_user_id, last_sequence) VALUES (?, ?, 1)
                            ON CONFLICT (app_id, app_user_id) DO UPDATE SET last_sequence = last_sequence + 1
                            RETURNING last_sequence
                            """), arguments: [event.appId, event.appUserId])
            else { throw StorageConflict("event counters of \(event.appId) returned no row") }
            event.sequence = sequence
            try assemble(event, always: false)
            event.entitlements = entitlements[event.appUserId]
            try db.cachedStatement(
                sql: """
                    INSERT INTO events (app_id, cursor, id, app_user_id, sequence, type, recorded_at, body, wire)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)
                    """
            ).execute(arguments: [
                event.appId, cursor, event.id, event.appUserId, event.sequence, event.type.rawValue, StoredTime.ms(event.recordedAt),
                WireJSON.encode(event),
            ])
            if endpoints[event.appId] == nil { endpoints[event.appId] = try Self.endpoints(db, appId: event.appId) }
            try enqueueDeliveries(db, event: event, endpointIds: batch.routes(event, endpoints[event.appId] ?? []), now: now)
        }
    }

    static func storeEntitlementStates(_ db: Database, appId: String, appUserId: String, states: [String: EntitlementState], now: Date) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO entitlement_states (app_id, app_user_id, body, updated_at, next_lapse_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (app_id, app_user_id) DO UPDATE
                SET body = excluded.body, updated_at = excluded.updated_at, next_lapse_at = excluded.next_lapse_at
                """
        ).execute(arguments: [
            appId, appUserId, StoredJSON.encode(states), StoredTime.ms(now), StoredTime.ms(EntitlementState.nextLapse(states, after: now)),
        ])
    }

    public func dueLapses(at now: Date, limit: Int) async throws -> [DueLapse] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT app_id, app_user_id, next_lapse_at FROM entitlement_states
                        WHERE next_lapse_at <= ? ORDER BY next_lapse_at LIMIT ?
                        """), arguments: [StoredTime.ms(now), limit]
            ).map { DueLapse(appId: $0["app_id"], appUserId: $0["app_user_id"], due: StoredTime.date($0["next_lapse_at"] as Int64)) }
        }
    }

    static func entitlementStates(_ db: Database, appId: String, appUserId: String) throws -> [String: EntitlementState] {
        let stored = try String.fetchOne(
            db.cachedStatement(sql: "SELECT body FROM entitlement_states WHERE app_id = ? AND app_user_id = ?"), arguments: [appId, appUserId])
        return StoredJSON.decode([String: EntitlementState].self, stored) ?? [:]
    }

    /// Everything the subscriber's view is built from, in one read transaction.
    public func subscriberRows(appId: String, appUserId: String, now: Date) async throws -> SubscriberRows {
        try await read { db in try Self.subscriberRows(db, appId: appId, appUserId: appUserId, catalog: nil, now: now) }
    }

    /// Everything `SubscriberView` is built from, as stored.
    static func subscriberRows(_ db: Database, appId: String, appUserId: String, catalog: [Product]?, now: Date) throws -> SubscriberRows {
        var rows = SubscriberRows(
            appUserId: appUserId, transactions: try transactions(db, appId: appId, appUserId: appUserId),
            subscriptions: try subscriptions(db, appId: appId, appUserId: appUserId),
            provisional: try provisionalGrants(db, appId: appId, appUserId: appUserId, now: now),
            catalog: try catalog ?? products(db, appId: appId), entitlements: try entitlementDefinitions(db, appId: appId),
            promotional: try promotionalGrants(db, appId: appId, appUserId: appUserId).filter { $0.revokedAt == nil },
            attributes: try attributes(db, appId: appId, appUserId: appUserId), suspension: try suspension(db, appId: appId, appUserId: appUserId),
            creditsSpent: try creditsSpent(db, appId: appId, appUserId: appUserId))
        rows.entitlementStates = try entitlementStates(db, appId: appId, appUserId: appUserId)
        rows.aliases = try aliases(db, appId: appId, appUserId: appUserId)
        rows.appTransaction = try appTransaction(db, appId: appId, appUserId: appUserId)
        return rows
    }
}
