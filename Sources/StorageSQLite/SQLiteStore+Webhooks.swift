public import Foundation
import GRDB
public import JobQueue
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: WebhookStore {
    public func createEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO webhook_endpoints (id, app_id, state, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
                arguments: [
                    endpoint.id, endpoint.appId, endpoint.state.rawValue, StoredJSON.encode(endpoint), StoredTime.ms(endpoint.createdAt),
                    StoredTime.ms(endpoint.updatedAt),
                ])
        }
    }

    public func endpoints(appId: String) async throws -> [WebhookEndpoint] {
        try await read { db in try Self.endpoints(db, appId: appId) }
    }

    public func endpoint(appId: String, id: String) async throws -> WebhookEndpoint? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT body FROM webhook_endpoints WHERE app_id = ? AND id = ?", arguments: [appId, id])
                .flatMap { StoredJSON.decode(WebhookEndpoint.self, $0) }
        }
    }

    public func updateEndpoint(_ endpoint: WebhookEndpoint, from: WebhookEndpoint.State, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE webhook_endpoints SET state = ?, body = ?, updated_at = ? WHERE app_id = ? AND id = ? AND state = ?",
                arguments: [
                    endpoint.state.rawValue, StoredJSON.encode(endpoint), StoredTime.ms(now), endpoint.appId, endpoint.id, from.rawValue,
                ])
            guard db.changesCount == 1 else { return false }
            if endpoint.state == .active { try Self.wakePending(db, endpointId: endpoint.id, nowMs: StoredTime.ms(now)) }
            return true
        }
    }

    public func deleteEndpoint(appId: String, id: String, cancel: JobLifecycle.Transition, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM webhook_endpoints WHERE app_id = ? AND id = ?", arguments: [appId, id])
            guard db.changesCount == 1 else { return false }
            try db.execute(
                sql: """
                    UPDATE jobs SET state = ?, finalized_at = ?, last_error = ?
                    WHERE state = ? AND id IN (SELECT job_id FROM webhook_deliveries WHERE endpoint_id = ?)
                    """,
                arguments: [cancel.to.rawValue, cancel.finalizes ? StoredTime.ms(now) : nil, cancel.lastError, cancel.from.rawValue, id])
            try db.execute(
                sql: "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ?)",
                arguments: [id])
            try db.execute(sql: "DELETE FROM webhook_deliveries WHERE endpoint_id = ?", arguments: [id])
            return true
        }
    }

    public func deliveries(
        endpointId: String, state: WebhookDelivery.State?, before: DeliveryPosition?, limit: Int
    ) async throws -> [WebhookDelivery] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND (? IS NULL OR state = ?)
                      AND (? IS NULL OR (created_at, id) < (?, ?))
                    ORDER BY created_at DESC, id DESC LIMIT ?
                    """,
                arguments: [
                    endpointId, state?.rawValue, state?.rawValue, before?.id, StoredTime.ms(before?.createdAt), before?.id, limit,
                ]
            ).map(Self.delivery(from:))
        }
    }

    public func deliveries(endpointId: String, appUserId: String, limit: Int) async throws -> [WebhookDelivery] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND app_user_id = ? ORDER BY sequence DESC, id DESC LIMIT ?"),
                arguments: [endpointId, appUserId, limit]
            ).map(Self.delivery(from:))
        }
    }

    public func attempts(deliveryId: String) async throws -> [DeliveryAttempt] {
        try await read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM webhook_attempts WHERE delivery_id = ? ORDER BY attempt", arguments: [deliveryId]).map {
                row in
                DeliveryAttempt(
                    deliveryId: row["delivery_id"], attempt: row["attempt"], at: StoredTime.date(row["at"] as Int64), status: row["status"],
                    latencyMs: row["latency_ms"], error: row["error"], responseExcerpt: row["response_excerpt"])
            }
        }
    }

    public func replayDeliveries(
        endpointId: String, deliveryId: String?, replay: DeliveryReplay, audit: AuditEntry?, now: Date
    ) async throws -> Int {
        try await write { db in
            let ids = try String.fetchAll(
                db, sql: "SELECT id FROM webhook_deliveries WHERE endpoint_id = ? AND state = ? AND (? IS NULL OR id = ?)",
                arguments: [endpointId, replay.from.rawValue, deliveryId, deliveryId])
            let nowMs = StoredTime.ms(now)
            for id in ids {
                let jobId = UUID().uuidString.lowercased()
                try db.execute(
                    sql: "INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
                    arguments: [jobId, deliverWebhookJobKind, id, replay.jobState.rawValue, nowMs, nowMs])
                try db.execute(
                    sql: """
                        UPDATE webhook_deliveries SET state = ?, job_id = ?, next_attempt_at = ?, first_attempt_at = NULL,
                            updated_at = ? WHERE id = ? AND state = ?
                        """,
                    arguments: [replay.to.rawValue, jobId, nowMs, nowMs, id, replay.from.rawValue])
                guard db.changesCount == 1 else { throw StorageConflict("delivery \(id) is no longer \(replay.from)") }
            }
            if !ids.isEmpty {
                try Self.wakePending(db, endpointId: endpointId, nowMs: nowMs)
                if let audit { try Self.recordAudit(db, audit) }
            }
            return ids.count
        }
    }

    public func skipDeadDelivery(endpointId: String, deliveryId: String, audit: AuditEntry?, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "UPDATE webhook_deliveries SET last_error = ?, updated_at = ? WHERE id = ? AND endpoint_id = ? AND state = 'dead'",
                arguments: [DeliveryWork.skippedMarker, StoredTime.ms(now), deliveryId, endpointId])
            guard db.changesCount == 1 else { return false }
            try Self.wakePending(db, endpointId: endpointId, nowMs: StoredTime.ms(now))
            if let audit { try Self.recordAudit(db, audit) }
            return true
        }
    }

    /// The endpoint's pending deliveries are due now: those held back by a dead letter go as
    /// soon as it is replayed (after it, by the order rule) or skipped.
    static func wakePending(_ db: Database, endpointId: String, nowMs: Int64) throws {
        try db.execute(
            sql: """
                UPDATE jobs SET run_at = ? WHERE state = 'available' AND run_at > ?
                  AND id IN (SELECT job_id FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending')
                """,
            arguments: [nowMs, nowMs, endpointId])
    }

    public func deliveriesForJobs(jobIds: [String]) async throws -> [String: DeliveryWork] {
        try await read { db in
            var works: [String: DeliveryWork] = [:]
            var endpoints: [String: WebhookEndpoint?] = [:]
            for jobId in jobIds { works[jobId] = try Self.deliveryForJob(db, jobId: jobId, endpoints: &endpoints) }
            return works
        }
    }

    /// `endpoints`: the endpoints read so far in this batch (most of a batch goes to one).
    static func deliveryForJob(_ db: Database, jobId: String, endpoints: inout [String: WebhookEndpoint?]) throws -> DeliveryWork? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM webhook_deliveries WHERE job_id = ?"), arguments: [jobId]) else {
            return nil
        }
        let delivery = try Self.delivery(from: row)
        let payload: DeliveryPayload
        if delivery.eventId.hasPrefix(forwardedNotificationPrefix) {
            let uuid = String(delivery.eventId.dropFirst(forwardedNotificationPrefix.count))
            guard
                let stored = try String.fetchOne(
                    db.cachedStatement(sql: "SELECT payload FROM notifications WHERE app_id = ? AND notification_uuid = ?"),
                    arguments: [delivery.appId, uuid])
            else { return nil }
            payload = .notification(uuid: uuid, body: DeliveryWork.notificationBody(storedPayload: stored))
        } else {
            guard
                let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT body, wire FROM events WHERE id = ?"), arguments: [delivery.eventId]),
                let body = StoredEventBody.wireBody(body: row["body"], wire: row["wire"])
            else { return nil }
            payload = .event(id: delivery.eventId, body: body)
        }
        let endpoint: WebhookEndpoint?
        if let known = endpoints[delivery.endpointId] {
            endpoint = known
        } else {
            endpoint = try String.fetchOne(
                db.cachedStatement(sql: "SELECT body FROM webhook_endpoints WHERE id = ?"), arguments: [delivery.endpointId]
            )
            .flatMap { StoredJSON.decode(WebhookEndpoint.self, $0) }
            endpoints[delivery.endpointId] = endpoint
        }
        let earlier = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT MIN(CASE WHEN state = 'pending' THEN COALESCE(next_attempt_at, created_at) END) AS due,
                        COUNT(CASE WHEN state = 'dead' THEN 1 END) AS dead
                    FROM webhook_deliveries
                    WHERE endpoint_id = ? AND app_user_id = ? AND sequence < ?
                      AND (state = 'pending' OR (state = 'dead' AND COALESCE(last_error, '') <> ?))
                    """),
            arguments: [delivery.endpointId, delivery.appUserId, delivery.sequence, DeliveryWork.skippedMarker])
        let due: Int64? = earlier?["due"]
        let dead: Int64 = earlier?["dead"] ?? 0
        return DeliveryWork(delivery: delivery, payload: payload, endpoint: endpoint, earlierDueAt: StoredTime.date(due), earlierDead: dead > 0)
    }

    public func finishDeliveryAttempt(_ lease: JobLease, _ change: DeliveryChange, now: Date) async throws -> Bool {
        try await write(priority: .work) { db in
            guard try Self.endAttempt(db, lease, change.job, now: now) else { return false }
            let attempt = change.attempt
            try db.cachedStatement(
                sql: """
                    INSERT INTO webhook_attempts (delivery_id, attempt, at, status, latency_ms, error, response_excerpt)
                    VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """
            ).execute(
                arguments: [
                    attempt.deliveryId, attempt.attempt, StoredTime.ms(attempt.at), attempt.status, attempt.latencyMs, attempt.error,
                    attempt.responseExcerpt,
                ])
            try db.cachedStatement(
                sql: """
                    UPDATE webhook_deliveries SET state = ?, attempts = ?, next_attempt_at = ?, first_attempt_at = ?, last_status = ?,
                        last_error = ?, updated_at = ?
                    WHERE id = ? AND state = ?
                    """
            ).execute(
                arguments: [
                    change.to.rawValue, attempt.attempt, StoredTime.ms(change.nextAttemptAt), StoredTime.ms(change.firstAttemptAt),
                    attempt.status, attempt.error, StoredTime.ms(now), change.deliveryId, change.from.rawValue,
                ])
            guard db.changesCount == 1 else { throw StorageConflict("delivery \(change.deliveryId) is no longer \(change.from)") }
            if let pause = change.pause { try Self.pause(db, endpointId: pause.endpointId, pause.transition, now: now) }
            if change.to == .delivered {
                // The subscriber's next event for this endpoint waited for this one: it goes now.
                try db.cachedStatement(
                    sql: """
                        UPDATE jobs SET run_at = ? WHERE state = 'available' AND run_at > ? AND id = (
                            SELECT later.job_id FROM webhook_deliveries later JOIN webhook_deliveries done ON done.id = ?
                            WHERE later.endpoint_id = done.endpoint_id AND later.app_user_id = done.app_user_id
                              AND later.sequence > done.sequence AND later.state = 'pending'
                            ORDER BY later.sequence LIMIT 1)
                        """
                ).execute(arguments: [StoredTime.ms(now), StoredTime.ms(now), change.deliveryId])
            }
            return true
        }
    }

    public func deliveryCounts() async throws -> [WebhookDelivery.State: Int] {
        try await read { db in
            var counts: [WebhookDelivery.State: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM webhook_deliveries GROUP BY state") {
                if let state = WebhookDelivery.State(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }

    public func recordEvents(_ batch: EventBatch, now: Date) async throws {
        try await write { db in try Self.record(batch, db: db, now: now) }
    }

    static func endpoints(_ db: Database, appId: String) throws -> [WebhookEndpoint] {
        try String.fetchAll(db, sql: "SELECT body FROM webhook_endpoints WHERE app_id = ? ORDER BY created_at, id", arguments: [appId])
            .compactMap { StoredJSON.decode(WebhookEndpoint.self, $0) }
    }

    /// A stored notification, forwarded to the endpoints its use case chose, in the order they
    /// were stored (one queue per endpoint: app user "", sequence = time stored).
    static func enqueueForwards(_ db: Database, appId: String, notificationUUID: String, to forwarding: [String], now: Date) throws {
        guard !forwarding.isEmpty else { return }
        try enqueue(
            db, appId: appId, eventId: forwardedNotificationPrefix + notificationUUID, appUserId: "", sequence: StoredTime.ms(now),
            endpointIds: forwarding, now: now)
    }

    /// One delivery and its job, due at once, for each endpoint the event is routed to.
    static func enqueueDeliveries(_ db: Database, event: SubscriberEvent, endpointIds: [String], now: Date) throws {
        try enqueue(
            db, appId: event.appId, eventId: event.id, appUserId: event.appUserId, sequence: event.sequence, endpointIds: endpointIds,
            now: now)
    }

    static func enqueue(
        _ db: Database, appId: String, eventId: String, appUserId: String, sequence: Int64, endpointIds: [String], now: Date
    ) throws {
        let nowMs = StoredTime.ms(now)
        for endpointId in endpointIds {
            let id = UUID().uuidString.lowercased()
            let jobId = UUID().uuidString.lowercased()
            try db.execute(
                sql: """
                    INSERT INTO webhook_deliveries (id, app_id, endpoint_id, event_id, app_user_id, sequence, state, attempts,
                        next_attempt_at, job_id, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?) ON CONFLICT (endpoint_id, event_id) DO NOTHING
                    """,
                arguments: [
                    id, appId, endpointId, eventId, appUserId, sequence, DeliveryLifecycle.initial.rawValue, nowMs, jobId, nowMs, nowMs,
                ])
            guard db.changesCount == 1 else { continue }
            try db.execute(
                sql: "INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)",
                arguments: [jobId, deliverWebhookJobKind, id, JobLifecycle.initial.rawValue, nowMs, nowMs])
        }
    }

    /// The endpoint takes `transition` if it is still in its `from` state; otherwise (an
    /// operator paused or deleted it meanwhile) nothing changes.
    static func pause(_ db: Database, endpointId: String, _ transition: EndpointLifecycle.Transition, now: Date) throws {
        guard
            var endpoint = try String.fetchOne(
                db, sql: "SELECT body FROM webhook_endpoints WHERE id = ? AND state = ?", arguments: [endpointId, transition.from.rawValue]
            ).flatMap({ StoredJSON.decode(WebhookEndpoint.self, $0) })
        else { return }
        endpoint.state = transition.to
        endpoint.pausedReason = transition.pausedReason
        endpoint.updatedAt = now
        try db.execute(
            sql: "UPDATE webhook_endpoints SET state = ?, body = ?, updated_at = ? WHERE id = ? AND state = ?",
            arguments: [transition.to.rawValue, StoredJSON.encode(endpoint), StoredTime.ms(now), endpointId, transition.from.rawValue])
    }

    static func delivery(from row: Row) throws -> WebhookDelivery {
        WebhookDelivery(
            id: row["id"], appId: row["app_id"], endpointId: row["endpoint_id"], eventId: row["event_id"], appUserId: row["app_user_id"],
            sequence: row["sequence"], state: try WebhookDelivery.State.stored(row["state"], column: "webhook_deliveries.state"),
            attempts: row["attempts"],
            nextAttemptAt: StoredTime.date(row["next_attempt_at"] as Int64?), lastStatus: row["last_status"], lastError: row["last_error"],
            createdAt: StoredTime.date(row["created_at"] as Int64), updatedAt: StoredTime.date(row["updated_at"] as Int64),
            firstAttemptAt: StoredTime.date(row["first_attempt_at"] as Int64?))
    }
}
