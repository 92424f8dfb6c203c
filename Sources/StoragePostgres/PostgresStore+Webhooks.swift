public import Foundation
public import JobQueue
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: WebhookStore {
    public func createEndpoint(_ endpoint: WebhookEndpoint) async throws {
        try await transaction { connection in
            try await connection.execute(
                """
                INSERT INTO webhook_endpoints (id, app_id, state, body, created_at, updated_at)
                VALUES (\(endpoint.id), \(endpoint.appId), \(endpoint.state.rawValue), \(StoredJSON.encode(endpoint)),
                    \(StoredTime.ms(endpoint.createdAt)), \(StoredTime.ms(endpoint.updatedAt)))
                """, logger: self.logger)
        }
    }

    public func endpoints(appId: String) async throws -> [WebhookEndpoint] {
        try await read { connection in try await Self.endpoints(connection, appId: appId, logger: self.logger) }
    }

    public func endpoint(appId: String, id: String) async throws -> WebhookEndpoint? {
        try await read { connection in
            try await connection.rows("SELECT body FROM webhook_endpoints WHERE app_id = \(appId) AND id = \(id)", logger: self.logger)
                .first.flatMap { StoredJSON.decode(WebhookEndpoint.self, try $0.value("body", as: String.self)) }
        }
    }

    public func updateEndpoint(_ endpoint: WebhookEndpoint, from: WebhookEndpoint.State, now: Date) async throws -> Bool {
        let nowMs = StoredTime.ms(now)
        return try await transaction { connection in
            let changed = try await connection.count(
                """
                UPDATE webhook_endpoints SET state = \(endpoint.state.rawValue), body = \(StoredJSON.encode(endpoint)), updated_at = \(nowMs)
                WHERE app_id = \(endpoint.appId) AND id = \(endpoint.id) AND state = \(from.rawValue) RETURNING 1
                """, logger: self.logger)
            guard changed == 1 else { return false }
            if endpoint.state == .active { try await self.wakePending(connection, endpointId: endpoint.id, nowMs: nowMs) }
            return true
        }
    }

    public func deleteEndpoint(appId: String, id: String, cancel: JobLifecycle.Transition, now: Date) async throws -> Bool {
        try await transaction { connection in
            let deleted = try await connection.count(
                "DELETE FROM webhook_endpoints WHERE app_id = \(appId) AND id = \(id) RETURNING 1", logger: self.logger)
            guard deleted == 1 else { return false }
            let nowMs: Int64 = StoredTime.ms(now)
            let finalized: Int64? = cancel.finalizes ? nowMs : nil
            try await connection.execute(
                """
                UPDATE jobs SET state = \(cancel.to.rawValue), finalized_at = \(finalized), last_error = \(cancel.lastError)
                WHERE state = \(cancel.from.rawValue) AND id IN (SELECT job_id FROM webhook_deliveries WHERE endpoint_id = \(id))
                """, logger: self.logger)
            try await connection.execute(
                "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = \(id))",
                logger: self.logger)
            try await connection.execute("DELETE FROM webhook_deliveries WHERE endpoint_id = \(id)", logger: self.logger)
            return true
        }
    }

    public func deliveries(
        endpointId: String, state: WebhookDelivery.State?, before: DeliveryPosition?, limit: Int
    ) async throws -> [WebhookDelivery] {
        // Without a position, one after every delivery stands in for it: one statement.
        let beforeAt = before.map { StoredTime.ms($0.createdAt) } ?? Int64.max
        return try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM webhook_deliveries WHERE endpoint_id = \(endpointId)
                  AND (\(state?.rawValue)::text IS NULL OR state = \(state?.rawValue))
                  AND (created_at, id) < (\(beforeAt), \(before?.id ?? "\u{10FFFF}"))
                ORDER BY created_at DESC, id DESC LIMIT \(limit)
                """, logger: self.logger
            ).map(Self.delivery(from:))
        }
    }

    public func deliveries(endpointId: String, appUserId: String, limit: Int) async throws -> [WebhookDelivery] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM webhook_deliveries WHERE endpoint_id = \(endpointId) AND app_user_id = \(appUserId)
                ORDER BY sequence DESC, id DESC LIMIT \(limit)
                """, logger: self.logger
            ).map(Self.delivery(from:))
        }
    }

    public func attempts(deliveryId: String) async throws -> [DeliveryAttempt] {
        try await read { connection in
            try await connection.rows(
                "SELECT * FROM webhook_attempts WHERE delivery_id = \(deliveryId) ORDER BY attempt", logger: self.logger
            ).map { row in
                DeliveryAttempt(
                    deliveryId: try row.value("delivery_id"), attempt: Int(try row.value("attempt", as: Int64.self)),
                    at: try row.date("at"), status: try row.value("status", as: Int64?.self).map(Int.init),
                    latencyMs: Int(try row.value("latency_ms", as: Int64.self)), error: try row.value("error"),
                    responseExcerpt: try row.value("response_excerpt"))
            }
        }
    }

    public func replayDeliveries(
        endpointId: String, deliveryId: String?, replay: DeliveryReplay, audit: AuditEntry?, now: Date
    ) async throws -> Int {
        let nowMs = StoredTime.ms(now)
        return try await transaction { connection in
            let ids = try await connection.rows(
                """
                SELECT id FROM webhook_deliveries WHERE endpoint_id = \(endpointId) AND state = \(replay.from.rawValue)
                  AND (\(deliveryId)::text IS NULL OR id = \(deliveryId)) FOR UPDATE
                """, logger: self.logger
            ).map { try $0.value("id", as: String.self) }
            for id in ids {
                let jobId = UUID().uuidString.lowercased()
                try await connection.execute(
                    """
                    INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at)
                    VALUES (\(jobId), \(deliverWebhookJobKind), \(id), \(replay.jobState.rawValue), 0, \(nowMs), \(nowMs))
                    """, logger: self.logger)
                QueuedJobs.note()
                let moved = try await connection.count(
                    """
                    UPDATE webhook_deliveries SET state = \(replay.to.rawValue), job_id = \(jobId), next_attempt_at = \(nowMs),
                        first_attempt_at = NULL, updated_at = \(nowMs) WHERE id = \(id) AND state = \(replay.from.rawValue) RETURNING 1
                    """, logger: self.logger)
                guard moved == 1 else { throw StorageConflict("delivery \(id) is no longer \(replay.from)") }
            }
            if !ids.isEmpty {
                try await self.wakePending(connection, endpointId: endpointId, nowMs: nowMs)
                if let audit { try await Self.recordAudit(connection, audit, logger: self.logger) }
            }
            return ids.count
        }
    }

    public func skipDeadDelivery(endpointId: String, deliveryId: String, audit: AuditEntry?, now: Date) async throws -> Bool {
        let nowMs = StoredTime.ms(now)
        return try await transaction { connection in
            let skipped = try await connection.count(
                """
                UPDATE webhook_deliveries SET last_error = \(DeliveryWork.skippedMarker), updated_at = \(nowMs)
                WHERE id = \(deliveryId) AND endpoint_id = \(endpointId) AND state = 'dead' RETURNING 1
                """, logger: self.logger)
            guard skipped == 1 else { return false }
            try await self.wakePending(connection, endpointId: endpointId, nowMs: nowMs)
            if let audit { try await Self.recordAudit(connection, audit, logger: self.logger) }
            return true
        }
    }

    /// The endpoint's pending deliveries are due now: those held back by a dead letter go as
    /// soon as it is replayed (after it, by the order rule) or skipped.
    func wakePending(_ connection: PostgresConnection, endpointId: String, nowMs: Int64) async throws {
        try await connection.execute(
            """
            UPDATE jobs SET run_at = \(nowMs) WHERE state = 'available' AND run_at > \(nowMs)
              AND id IN (SELECT job_id FROM webhook_deliveries WHERE endpoint_id = \(endpointId) AND state = 'pending')
            """, logger: self.logger)
        QueuedJobs.note()
    }

    /// One round trip for the batch's deliveries, each with its event's body and when an earlier
    /// pending event of the same subscriber to the same endpoint is due, and one for the endpoints
    /// they name; a forwarded notification (rare) is read on its own. Reading each delivery with
    /// three queries cost three round trips per delivery on one connection.
    public func deliveriesForJobs(jobIds: [String]) async throws -> [String: DeliveryWork] {
        guard !jobIds.isEmpty else { return [:] }
        let logger = self.logger
        return try await read(on: .work) { connection in
            let rows = try await connection.rows(
                """
                SELECT d.*, e.body AS event_body, e.wire AS event_wire,
                    (SELECT MIN(COALESCE(p.next_attempt_at, p.created_at)) FROM webhook_deliveries p
                     WHERE p.endpoint_id = d.endpoint_id AND p.app_user_id = d.app_user_id AND p.sequence < d.sequence
                       AND p.state = 'pending') AS earlier_due,
                    EXISTS (SELECT 1 FROM webhook_deliveries p
                     WHERE p.endpoint_id = d.endpoint_id AND p.app_user_id = d.app_user_id AND p.sequence < d.sequence
                       AND p.state = 'dead' AND COALESCE(p.last_error, '') <> \(DeliveryWork.skippedMarker)) AS earlier_dead
                FROM webhook_deliveries d LEFT JOIN events e ON e.id = d.event_id
                WHERE d.job_id = ANY(\(jobIds))
                """, logger: logger)
            let deliveries = try rows.map { row in (jobId: try row.value("job_id", as: String.self), delivery: try Self.delivery(from: row), row: row)
            }
            let endpointIds = Array(Set(deliveries.map(\.delivery.endpointId)))
            var endpoints: [String: WebhookEndpoint] = [:]
            for row in try await connection.rows("SELECT body FROM webhook_endpoints WHERE id = ANY(\(endpointIds))", logger: logger) {
                if let endpoint = StoredJSON.decode(WebhookEndpoint.self, try row.value("body", as: String.self)) {
                    endpoints[endpoint.id] = endpoint
                }
            }
            var works: [String: DeliveryWork] = [:]
            for (jobId, delivery, row) in deliveries {
                let payload: DeliveryPayload
                if delivery.eventId.hasPrefix(forwardedNotificationPrefix) {
                    let uuid = String(delivery.eventId.dropFirst(forwardedNotificationPrefix.count))
                    guard
                        let stored = try await connection.rows(
                            "SELECT payload FROM notifications WHERE app_id = \(delivery.appId) AND notification_uuid = \(uuid)",
                            logger: logger
                        ).first.map({ try $0.value("payload", as: String.self) })
                    else { continue }
                    payload = .notification(uuid: uuid, body: DeliveryWork.notificationBody(storedPayload: stored))
                } else {
                    guard
                        let stored = try row.value("event_body", as: String?.self),
                        let body = StoredEventBody.wireBody(body: stored, wire: try row.value("event_wire", as: Bool?.self) ?? false)
                    else { continue }
                    payload = .event(id: delivery.eventId, body: body)
                }
                works[jobId] = DeliveryWork(
                    delivery: delivery, payload: payload, endpoint: endpoints[delivery.endpointId],
                    earlierDueAt: StoredTime.date(try row.value("earlier_due", as: Int64?.self)),
                    earlierDead: try row.value("earlier_dead", as: Bool.self))
            }
            return works
        }
    }

    public func finishDeliveryAttempt(_ lease: JobLease, _ change: DeliveryChange, now: Date) async throws -> Bool {
        let logger = self.logger
        if change.pause == nil {
            let (held, changed) = try await statement(on: .work) { connection in
                try await Self.finishAttempt(connection, lease, change, now: now, logger: logger)
            }
            guard held else { return false }
            guard changed else { throw StorageConflict("delivery \(change.deliveryId) is no longer \(change.from)") }
            return true
        }
        return try await transaction(on: .work) { connection in
            guard try await Self.endAttempt(connection, lease, change.job, now: now, logger: logger) else { return false }
            let attempt = change.attempt
            let status = attempt.status.map(Int64.init)
            try await connection.execute(
                """
                INSERT INTO webhook_attempts (delivery_id, attempt, at, status, latency_ms, error, response_excerpt)
                VALUES (\(attempt.deliveryId), \(Int64(attempt.attempt)), \(StoredTime.ms(attempt.at)), \(status),
                    \(Int64(attempt.latencyMs)), \(attempt.error), \(attempt.responseExcerpt))
                ON CONFLICT DO NOTHING
                """, logger: logger)
            let updated = try await connection.count(
                """
                UPDATE webhook_deliveries SET state = \(change.to.rawValue), attempts = \(Int64(attempt.attempt)),
                    next_attempt_at = \(StoredTime.ms(change.nextAttemptAt)), first_attempt_at = \(StoredTime.ms(change.firstAttemptAt)),
                    last_status = \(status), last_error = \(attempt.error), updated_at = \(StoredTime.ms(now))
                WHERE id = \(change.deliveryId) AND state = \(change.from.rawValue) RETURNING 1
                """, logger: logger)
            guard updated == 1 else { throw StorageConflict("delivery \(change.deliveryId) is no longer \(change.from)") }
            if let pause = change.pause {
                try await Self.pause(connection, endpointId: pause.endpointId, pause.transition, now: now, logger: logger)
            }
            return true
        }
    }

    /// An attempt that pauses no endpoint, ended in one statement committed on its own (one round
    /// trip, not five): the job row locked if the lease still holds it; the delivery moved only
    /// then and only from the state the attempt found; the job ended and the attempt recorded only
    /// if the delivery moved. So either all of it is written or none: (false, _) when the lease
    /// was lost, (true, false) when the delivery had changed meanwhile.
    static func finishAttempt(
        _ connection: PostgresConnection, _ lease: JobLease, _ change: DeliveryChange, now: Date, logger: Logger
    ) async throws -> (held: Bool, changed: Bool) {
        let job = change.job
        let attempt = change.attempt
        let status = attempt.status.map(Int64.init)
        let finalizedAt: Int64? = job.finalizes ? StoredTime.ms(now) as Int64 : nil
        let uncounted: Int64 = job.uncountsAttempt ? 1 : 0
        let nowMs = StoredTime.ms(now)
        let row = try await connection.rows(
            """
            WITH held AS (
                SELECT id FROM jobs WHERE id = \(lease.jobId) AND state = \(job.from.rawValue) AND lease_token = \(lease.token) FOR UPDATE
            ), delivery AS (
                UPDATE webhook_deliveries SET state = \(change.to.rawValue), attempts = \(Int64(attempt.attempt)),
                    next_attempt_at = \(StoredTime.ms(change.nextAttemptAt)), first_attempt_at = \(StoredTime.ms(change.firstAttemptAt)),
                    last_status = \(status), last_error = \(attempt.error), updated_at = \(StoredTime.ms(now))
                WHERE id = \(change.deliveryId) AND state = \(change.from.rawValue) AND EXISTS (SELECT 1 FROM held)
                RETURNING 1
            ), ended AS (
                UPDATE jobs SET state = \(job.to.rawValue), run_at = COALESCE(\(StoredTime.ms(job.runAt)), run_at),
                    attempt = attempt - \(uncounted), finalized_at = \(finalizedAt), last_error = \(job.lastError),
                    lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL
                WHERE id IN (SELECT id FROM held) AND EXISTS (SELECT 1 FROM delivery)
                RETURNING 1
            ), recorded AS (
                INSERT INTO webhook_attempts (delivery_id, attempt, at, status, latency_ms, error, response_excerpt)
                SELECT \(attempt.deliveryId), \(Int64(attempt.attempt)), \(StoredTime.ms(attempt.at)), \(status),
                    \(Int64(attempt.latencyMs)), \(attempt.error), \(attempt.responseExcerpt)
                FROM ended
                ON CONFLICT DO NOTHING
            ), following AS (
                -- Delivered: the subscriber's next event for this endpoint waited for this one, and goes now.
                UPDATE jobs SET run_at = \(nowMs)
                WHERE \(change.to == .delivered) AND state = 'available' AND run_at > \(nowMs) AND EXISTS (SELECT 1 FROM ended) AND id = (
                    SELECT later.job_id FROM webhook_deliveries later JOIN webhook_deliveries done ON done.id = \(change.deliveryId)
                    WHERE later.endpoint_id = done.endpoint_id AND later.app_user_id = done.app_user_id
                      AND later.sequence > done.sequence AND later.state = 'pending'
                    ORDER BY later.sequence LIMIT 1)
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM held) AS held, (SELECT count(*) FROM delivery) AS changed,
                (SELECT count(*) FROM following) AS following
            """, logger: logger
        ).first
        // Announced only when a delivered one made the subscriber's next delivery due: every
        // delivery waking the runners sent each of them to lease nothing (docs/BENCHMARKS.md).
        if try row?.value("following", as: Int64.self) == 1 { QueuedJobs.note() }
        return (try row?.value("held", as: Int64.self) == 1, try row?.value("changed", as: Int64.self) == 1)
    }

    public func deliveryCounts() async throws -> [WebhookDelivery.State: Int] {
        try await read { connection in
            var counts: [WebhookDelivery.State: Int] = [:]
            for row in try await connection.rows("SELECT state, COUNT(*) AS n FROM webhook_deliveries GROUP BY state", logger: self.logger) {
                if let state = WebhookDelivery.State(rawValue: try row.value("state")) { counts[state] = Int(try row.value("n", as: Int64.self)) }
            }
            return counts
        }
    }

    public func recordEvents(_ batch: EventBatch, now: Date) async throws {
        let logger = self.logger
        try await transaction { connection in try await Self.record(batch, connection: connection, now: now, logger: logger) }
    }

    static func endpoints(_ connection: PostgresConnection, appId: String, logger: Logger) async throws -> [WebhookEndpoint] {
        try await connection.rows("SELECT body FROM webhook_endpoints WHERE app_id = \(appId) ORDER BY created_at, id", logger: logger)
            .compactMap { StoredJSON.decode(WebhookEndpoint.self, try $0.value("body", as: String.self)) }
    }

    /// A stored notification, forwarded to the endpoints its use case chose, in the order they
    /// were stored (one queue per endpoint: app user "", sequence = time stored).
    static func enqueueForwards(
        _ connection: PostgresConnection, appId: String, notificationUUID: String, to forwarding: [String], now: Date, logger: Logger
    ) async throws {
        guard !forwarding.isEmpty else { return }
        try await enqueue(
            connection, appId: appId, eventId: forwardedNotificationPrefix + notificationUUID, appUserId: "",
            sequence: StoredTime.ms(now), endpointIds: forwarding, now: now, logger: logger)
    }

    /// One delivery and its job, due at once, for each endpoint the event is routed to.
    static func enqueueDeliveries(
        _ connection: PostgresConnection, event: SubscriberEvent, endpointIds: [String], now: Date, logger: Logger
    ) async throws {
        try await enqueue(
            connection, appId: event.appId, eventId: event.id, appUserId: event.appUserId, sequence: event.sequence,
            endpointIds: endpointIds, now: now, logger: logger)
    }

    static func enqueue(
        _ connection: PostgresConnection, appId: String, eventId: String, appUserId: String, sequence: Int64, endpointIds: [String],
        now: Date, logger: Logger
    ) async throws {
        let nowMs = StoredTime.ms(now)
        for endpointId in endpointIds {
            let id = UUID().uuidString.lowercased()
            let jobId = UUID().uuidString.lowercased()
            let inserted = try await connection.count(
                """
                INSERT INTO webhook_deliveries (id, app_id, endpoint_id, event_id, app_user_id, sequence, state, attempts,
                    next_attempt_at, job_id, created_at, updated_at)
                VALUES (\(id), \(appId), \(endpointId), \(eventId), \(appUserId), \(sequence), \(DeliveryLifecycle.initial.rawValue), 0,
                    \(nowMs), \(jobId), \(nowMs), \(nowMs))
                ON CONFLICT (endpoint_id, event_id) DO NOTHING RETURNING 1
                """, logger: logger)
            guard inserted == 1 else { continue }
            try await connection.execute(
                """
                INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at)
                VALUES (\(jobId), \(deliverWebhookJobKind), \(id), \(JobLifecycle.initial.rawValue), 0, \(nowMs), \(nowMs))
                """, logger: logger)
            QueuedJobs.note()
        }
    }

    /// The endpoint takes `transition` if it is still in its `from` state; otherwise (an
    /// operator paused or deleted it meanwhile) nothing changes.
    static func pause(
        _ connection: PostgresConnection, endpointId: String, _ transition: EndpointLifecycle.Transition, now: Date, logger: Logger
    ) async throws {
        guard
            var endpoint = try await connection.rows(
                "SELECT body FROM webhook_endpoints WHERE id = \(endpointId) AND state = \(transition.from.rawValue) FOR UPDATE",
                logger: logger
            ).first.flatMap({ StoredJSON.decode(WebhookEndpoint.self, try $0.value("body", as: String.self)) })
        else { return }
        endpoint.state = transition.to
        endpoint.pausedReason = transition.pausedReason
        endpoint.updatedAt = now
        try await connection.execute(
            """
            UPDATE webhook_endpoints SET state = \(transition.to.rawValue), body = \(StoredJSON.encode(endpoint)),
                updated_at = \(StoredTime.ms(now))
            WHERE id = \(endpointId) AND state = \(transition.from.rawValue)
            """, logger: logger)
    }

    static func delivery(from row: PostgresRandomAccessRow) throws -> WebhookDelivery {
        WebhookDelivery(
            id: try row.value("id"), appId: try row.value("app_id"), endpointId: try row.value("endpoint_id"),
            eventId: try row.value("event_id"), appUserId: try row.value("app_user_id"), sequence: try row.value("sequence"),
            state: try WebhookDelivery.State.stored(try row.value("state"), column: "webhook_deliveries.state"),
            attempts: Int(try row.value("attempts", as: Int64.self)), nextAttemptAt: try row.optionalDate("next_attempt_at"),
            lastStatus: try row.value("last_status", as: Int64?.self).map(Int.init), lastError: try row.value("last_error"),
            createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            firstAttemptAt: try row.optionalDate("first_attempt_at"))
    }
}
