public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain
import StorekeeperWire

extension PostgresStore: EventStore {
    public func events(appId: String, after cursor: Int64, types: [EventType], limit: Int) async throws -> [RecordedEvent] {
        try await read { connection in
            let rows =
                if types.isEmpty {
                    try await connection.rows(
                        """
                        SELECT cursor, body, wire FROM events WHERE app_id = \(appId) AND cursor > \(cursor)
                        ORDER BY cursor LIMIT \(limit)
                        """, logger: self.logger)
                } else {
                    try await connection.rows(
                        """
                        SELECT cursor, body, wire FROM events WHERE app_id = \(appId) AND cursor > \(cursor) AND type = ANY(\(types.map(\.rawValue)))
                        ORDER BY cursor LIMIT \(limit)
                        """, logger: self.logger)
                }
            return try rows.compactMap(Self.recordedEvent(from:))
        }
    }

    public func subscriberEvents(
        appId: String, appUserId: String, afterSequence sequence: Int64, limit: Int
    ) async throws -> [RecordedEvent] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT cursor, body, wire FROM events WHERE app_id = \(appId) AND app_user_id = \(appUserId) AND sequence > \(sequence)
                ORDER BY sequence LIMIT \(limit)
                """, logger: self.logger
            ).compactMap(Self.recordedEvent(from:))
        }
    }

    public func deleteEvents(recordedBefore cutoff: Date, limit: Int) async throws -> Int {
        try await transaction { connection in
            let ids = try await connection.rows(
                """
                SELECT id FROM events e WHERE recorded_at < \(StoredTime.ms(cutoff))
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state <> 'delivered')
                LIMIT \(limit) FOR UPDATE SKIP LOCKED
                """, logger: self.logger
            ).map { try $0.value("id", as: String.self) }
            guard !ids.isEmpty else { return 0 }
            try await connection.execute(
                "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE event_id = ANY(\(ids)))",
                logger: self.logger)
            try await connection.execute("DELETE FROM webhook_deliveries WHERE event_id = ANY(\(ids))", logger: self.logger)
            try await connection.execute("DELETE FROM events WHERE id = ANY(\(ids))", logger: self.logger)
            return ids.count
        }
    }

    static func recordedEvent(from row: PostgresRandomAccessRow) throws -> RecordedEvent? {
        StoredEventBody.event(body: try row.value("body", as: String.self), wire: try row.value("wire", as: Bool.self)).map {
            RecordedEvent(cursor: (try? row.value("cursor", as: Int64.self)) ?? 0, event: $0)
        }
    }

    /// Records the batch's events not recorded yet. Each subscriber's sequence row is locked
    /// before their rows are read, several subscribers' in one statement and in sorted order
    /// (two transactions telling the same two subscribers, a transfer, cannot wait on each other): a sweep and a verification of one subscriber assess in turn,
    /// each on what the other committed. The app's cursor row is locked last, by the statement
    /// that inserts the events, and held to commit: transactions recording events of one app
    /// commit their cursors in order, so a feed reader never sees cursor n+1 before n, and that
    /// app-wide lock is held for one statement and the commit, not for the whole assessment
    /// (docs/SCALING.md). This is why the events write is applied last.
    static func record(_ batch: EventBatch, connection: PostgresConnection, now: Date, logger: Logger) async throws {
        var entitlements: [String: SubscriberView] = [:]
        var endpoints: [String: [WebhookEndpoint]] = [:]
        // One subscriber's new events lock their row as they take its numbers; several
        // subscribers', or a reassessment (which reads before it records), lock first.
        if !batch.unrecorded.isEmpty || Set(batch.events.map { [$0.appId, $0.appUserId] }).count > 1 {
            try await lockSequences(of: batch.events, connection: connection, logger: logger)
        }
        // The batch's events, then the entitlement events they cause (appended as each
        // subscriber's entitlements are first built).
        var queue = batch.events[...]
        /// The subscriber's view once per batch, assembled with the first of their events as
        /// the trigger; the entitlement events it causes join the queue.
        func assemble(_ event: SubscriberEvent, always: Bool) async throws {
            guard entitlements[event.appUserId] == nil else { return }
            let (rows, appEndpoints) = try await subscriberRead(
                connection, appId: event.appId, appUserId: event.appUserId, catalog: batch.catalog, withEndpoints: endpoints[event.appId] == nil,
                now: now, logger: logger)
            if let appEndpoints { endpoints[event.appId] = appEndpoints }
            let assembly = SubscriberAssembly(rows, now: now, trigger: event)
            if let states = assembly.changedStates ?? (always ? rows.entitlementStates : nil) {
                try await storeEntitlementStates(connection, appId: event.appId, appUserId: event.appUserId, states: states, now: now, logger: logger)
            }
            entitlements[event.appUserId] = assembly.view
            queue.append(contentsOf: assembly.events)
        }
        var fresh: [SubscriberEvent] = []
        var taken = Set<String>()
        while var event = queue.popFirst() {
            if batch.unrecorded.contains(event.id) {
                // Its states are stored even unchanged, so the next lapse moves on.
                try await assemble(event, always: true)
                continue
            }
            // An event already recorded (a repeated transaction) takes no sequence number; a new
            // one takes the subscriber's next.
            guard taken.insert(event.id).inserted,
                let counters = try await connection.rows(
                    """
                    WITH fresh AS (SELECT NOT EXISTS (SELECT 1 FROM events WHERE id = \(event.id)) AS yes)
                    INSERT INTO event_sequences (app_id, app_user_id, last_sequence)
                    SELECT \(event.appId), \(event.appUserId), 1 FROM fresh WHERE yes
                    ON CONFLICT (app_id, app_user_id) DO UPDATE SET last_sequence = event_sequences.last_sequence + 1
                    RETURNING last_sequence
                    """, prepared: true, logger: logger
                ).first
            else { continue }
            event.sequence = try counters.value("last_sequence", as: Int64.self)
            try await assemble(event, always: false)
            event.entitlements = entitlements[event.appUserId]
            if endpoints[event.appId] == nil { endpoints[event.appId] = try await Self.endpoints(connection, appId: event.appId, logger: logger) }
            try await enqueueDeliveries(
                connection, event: event, endpointIds: batch.routes(event, endpoints[event.appId] ?? []), now: now, logger: logger)
            fresh.append(event)
        }
        try await insert(fresh, connection: connection, logger: logger)
    }

    /// Creates and locks the sequence row of every subscriber the batch's events tell, in one
    /// statement, in sorted order.
    static func lockSequences(of events: [SubscriberEvent], connection: PostgresConnection, logger: Logger) async throws {
        let subscribers = Set(events.map { [$0.appId, $0.appUserId] }).sorted { ($0[0], $0[1]) < ($1[0], $1[1]) }
        guard !subscribers.isEmpty else { return }
        try await connection.execute(
            """
            INSERT INTO event_sequences (app_id, app_user_id, last_sequence)
            SELECT s.app_id, s.app_user_id, 0 FROM unnest(\(subscribers.map { $0[0] }), \(subscribers.map { $0[1] })) WITH ORDINALITY
                AS s(app_id, app_user_id, position)
            ORDER BY s.position
            ON CONFLICT (app_id, app_user_id) DO UPDATE SET last_sequence = event_sequences.last_sequence
            """, prepared: true, logger: logger)
    }

    /// Inserts the events, each app's in one statement that takes the app's next cursors: the
    /// cursor row's lock is the last one the transaction takes.
    static func insert(_ events: [SubscriberEvent], connection: PostgresConnection, logger: Logger) async throws {
        var apps: [String] = []
        var byApp: [String: [SubscriberEvent]] = [:]
        for event in events {
            if byApp[event.appId] == nil { apps.append(event.appId) }
            byApp[event.appId, default: []].append(event)
        }
        for appId in apps {
            let events = byApp[appId] ?? []
            let count = Int64(events.count)
            try await connection.execute(
                """
                WITH cursor AS (
                    INSERT INTO event_cursors (app_id, last_cursor) VALUES (\(appId), \(count))
                    ON CONFLICT (app_id) DO UPDATE SET last_cursor = event_cursors.last_cursor + \(count)
                    RETURNING last_cursor
                )
                INSERT INTO events (app_id, cursor, id, app_user_id, sequence, type, recorded_at, body, wire)
                SELECT \(appId), cursor.last_cursor - \(count) + e.position, e.id, e.app_user_id, e.sequence, e.type, e.recorded_at, e.body, TRUE
                FROM cursor, unnest(
                    \(events.map(\.id)), \(events.map(\.appUserId)), \(events.map(\.sequence)), \(events.map(\.type.rawValue)),
                    \(events.map { StoredTime.ms($0.recordedAt) }), \(events.map { WireJSON.encode($0) })
                ) WITH ORDINALITY AS e(id, app_user_id, sequence, type, recorded_at, body, position)
                """, prepared: true, logger: logger)
        }
    }

    static func storeEntitlementStates(
        _ connection: PostgresConnection, appId: String, appUserId: String, states: [String: EntitlementState], now: Date, logger: Logger
    ) async throws {
        try await connection.execute(
            """
            INSERT INTO entitlement_states (app_id, app_user_id, body, updated_at, next_lapse_at)
            VALUES (\(appId), \(appUserId), \(StoredJSON.encode(states)), \(StoredTime.ms(now)),
                \(StoredTime.ms(EntitlementState.nextLapse(states, after: now))))
            ON CONFLICT (app_id, app_user_id) DO UPDATE
            SET body = excluded.body, updated_at = excluded.updated_at, next_lapse_at = excluded.next_lapse_at
            """, prepared: true, logger: logger)
    }

    public func dueLapses(at now: Date, limit: Int) async throws -> [DueLapse] {
        try await read(on: .work) { connection in
            try await connection.rows(
                """
                SELECT app_id, app_user_id, next_lapse_at FROM entitlement_states
                WHERE next_lapse_at <= \(StoredTime.ms(now)) ORDER BY next_lapse_at LIMIT \(limit)
                """, logger: self.logger
            ).map {
                DueLapse(
                    appId: try $0.value("app_id", as: String.self), appUserId: try $0.value("app_user_id", as: String.self),
                    due: StoredTime.date(try $0.value("next_lapse_at", as: Int64.self)))
            }
        }
    }

    /// Everything the subscriber's view is built from, in one read-only transaction (one snapshot).
    public func subscriberRows(appId: String, appUserId: String, now: Date) async throws -> SubscriberRows {
        try await transaction { connection in
            try await connection.execute("SET TRANSACTION READ ONLY", logger: self.logger)
            return try await Self.subscriberRows(connection, appId: appId, appUserId: appUserId, catalog: nil, now: now, logger: self.logger)
        }
    }

    /// Everything `SubscriberView` is built from, as stored.
    static func subscriberRows(
        _ connection: PostgresConnection, appId: String, appUserId: String, catalog: [Product]?, now: Date, logger: Logger
    ) async throws -> SubscriberRows {
        try await subscriberRead(
            connection, appId: appId, appUserId: appUserId, catalog: catalog, withEndpoints: false, now: now, logger: logger
        ).rows
    }

    /// The subscriber's rows and, `withEndpoints`, the app's webhook endpoints (an event's
    /// deliveries are routed to them), in one statement: each round trip costs the server and
    /// PostgreSQL more core time than the reading it carries, and this read runs in every
    /// grant. Table rows travel as `row_to_json` (see `StoredRow`).
    static func subscriberRead(
        _ connection: PostgresConnection, appId: String, appUserId: String, catalog: [Product]?, withEndpoints: Bool, now: Date,
        logger: Logger
    ) async throws -> (rows: SubscriberRows, endpoints: [WebhookEndpoint]?) {
        var bindings = PostgresBindings()
        bindings.append(appId)
        bindings.append(appUserId)
        bindings.append(StoredTime.ms(now))
        let documents = try await connection.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT ARRAY(SELECT row_to_json(t)::text FROM transactions t WHERE app_id = $1 AND app_user_id = $2
                            ORDER BY purchase_date, transaction_id)
                            AS transactions,
                        ARRAY(SELECT row_to_json(s)::text FROM subscriptions s WHERE app_id = $1 AND app_user_id = $2
                            ORDER BY original_transaction_id)
                            AS subscriptions,
                        ARRAY(SELECT row_to_json(p)::text FROM provisional_grants p
                            WHERE app_id = $1 AND app_user_id = $2 AND expires_at > $3 ORDER BY product_id, transaction_id)
                            AS provisional,
                        \(catalog == nil ? "ARRAY(SELECT body FROM products WHERE app_id = $1 ORDER BY product_id)" : "NULL::text[]")
                            AS products,
                        ARRAY(SELECT body FROM entitlement_definitions WHERE app_id = $1 ORDER BY entitlement_id) AS entitlements,
                        ARRAY(SELECT body FROM promotional_grants WHERE app_id = $1 AND app_user_id = $2 ORDER BY created_at, id)
                            AS promotional,
                        (SELECT body FROM subscriber_attributes WHERE app_id = $1 AND app_user_id = $2) AS attributes,
                        (SELECT body FROM access_suspensions WHERE app_id = $1 AND app_user_id = $2) AS suspension,
                        (SELECT COALESCE(SUM(amount), 0)::BIGINT FROM credit_spends WHERE app_id = $1 AND app_user_id = $2)
                            AS credits_spent,
                        (SELECT body FROM entitlement_states WHERE app_id = $1 AND app_user_id = $2) AS entitlement_states,
                        ARRAY(SELECT alias_id FROM aliases WHERE app_id = $1 AND app_user_id = $2 ORDER BY created_at, alias_id) AS aliases,
                        (SELECT body FROM app_transactions WHERE app_id = $1 AND app_user_id = $2) AS app_transaction,
                        \(withEndpoints ? "ARRAY(SELECT body FROM webhook_endpoints WHERE app_id = $1 ORDER BY created_at, id)" : "NULL::text[]")
                            AS endpoints
                    """, binds: bindings), prepared: true, logger: logger)[0]
        func decoded<T: Decodable>(_ column: String, as type: T.Type) throws -> T? {
            StoredJSON.decode(type, try documents.value(column, as: String?.self))
        }
        func decodedAll<T: Decodable>(_ column: String, as type: T.Type) throws -> [T] {
            try documents.value(column, as: [String].self).compactMap { StoredJSON.decode(type, $0) }
        }
        var rows = SubscriberRows(
            appUserId: appUserId, transactions: try JSONStoredRow.rows("transactions", of: documents).map(transaction(from:)),
            subscriptions: try JSONStoredRow.rows("subscriptions", of: documents).map(subscription(from:)),
            provisional: try JSONStoredRow.rows("provisional", of: documents).map(provisionalGrant(from:)),
            catalog: try catalog ?? decodedAll("products", as: Product.self),
            entitlements: try decodedAll("entitlements", as: EntitlementDefinition.self),
            promotional: try decodedAll("promotional", as: PromotionalGrant.self).filter { $0.revokedAt == nil },
            attributes: try decoded("attributes", as: SubscriberAttributes.self),
            suspension: try decoded("suspension", as: AccessSuspension.self),
            creditsSpent: Int(try documents.value("credits_spent", as: Int64.self)))
        rows.entitlementStates = try decoded("entitlement_states", as: [String: EntitlementState].self) ?? [:]
        rows.aliases = try documents.value("aliases", as: [String].self)
        rows.appTransaction = try decoded("app_transaction", as: CustomerAppTransaction.self)
        return (rows, withEndpoints ? try decodedAll("endpoints", as: WebhookEndpoint.self) : nil)
    }
}
