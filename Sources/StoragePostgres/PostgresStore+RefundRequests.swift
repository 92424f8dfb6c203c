public import Foundation
import JobQueue
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: RefundRequestStore {
    /// Stores a request with its notification; a pending one gets its job, due at once.
    static func insertRefundRequest(_ connection: PostgresConnection, _ request: RefundRequest, now: Date, logger: Logger) async throws {
        let nowMs = StoredTime.ms(now)
        let inserted = try await connection.count(
            """
            INSERT INTO refund_requests (app_id, notification_uuid, transaction_id, app_user_id, state, job_id, requested_at, body)
            VALUES (\(request.appId), \(request.notificationUUID), \(request.transactionId), \(request.appUserId), \(request.state.rawValue),
                \(request.jobId), \(StoredTime.ms(request.requestedAt)), \(RefundRequestBody.encode(request)))
            ON CONFLICT (app_id, notification_uuid) DO NOTHING RETURNING 1
            """, logger: logger)
        guard inserted == 1, request.state == .pending, let jobId = request.jobId else { return }
        try await connection.execute(
            """
            INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at)
            VALUES (\(jobId), \(answerRefundRequestJobKind), \(request.notificationUUID), \(JobLifecycle.initial.rawValue), 0, \(nowMs), \(nowMs))
            """, logger: logger)
        QueuedJobs.note()
    }

    public func refundRequest(appId: String, notificationUUID: String) async throws -> RefundRequest? {
        try await read { connection in
            try await connection.rows(
                "SELECT app_user_id, body FROM refund_requests WHERE app_id = \(appId) AND notification_uuid = \(notificationUUID)",
                logger: self.logger
            ).first.flatMap { try Self.refundRequest(from: $0) }
        }
    }

    public func refundRequest(jobId: String) async throws -> RefundRequest? {
        try await read { connection in
            try await connection.rows("SELECT app_user_id, body FROM refund_requests WHERE job_id = \(jobId)", logger: self.logger)
                .first.flatMap { try Self.refundRequest(from: $0) }
        }
    }

    public func finishRefundRequest(_ request: RefundRequest, events: EventBatch?, now: Date) async throws -> Bool {
        let logger = self.logger
        return try await transaction { connection in
            // Guarded by the state read: only a pending request ends, once.
            let updated = try await connection.count(
                """
                UPDATE refund_requests SET state = \(request.state.rawValue), body = \(RefundRequestBody.encode(request))
                WHERE app_id = \(request.appId) AND notification_uuid = \(request.notificationUUID)
                    AND state = \(RefundRequest.State.pending.rawValue) RETURNING 1
                """, logger: logger)
            guard updated == 1 else { return false }
            if let events { try await Self.record(events, connection: connection, now: now, logger: logger) }
            return true
        }
    }

    public func refundRequests(appId: String, transactionId: String?, limit: Int) async throws -> [RefundRequest] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT app_user_id, body FROM refund_requests
                WHERE app_id = \(appId) AND (\(transactionId)::text IS NULL OR transaction_id = \(transactionId))
                ORDER BY requested_at DESC, notification_uuid LIMIT \(Int64(limit))
                """, logger: self.logger
            ).compactMap { try Self.refundRequest(from: $0) }
        }
    }

    public func openRefundRequests(appId: String, appUserId: String) async throws -> [RefundRequest] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT app_user_id, body FROM refund_requests
                WHERE app_id = \(appId) AND app_user_id = \(appUserId)
                    AND state IN (\(RefundRequest.State.pending.rawValue), \(RefundRequest.State.sent.rawValue))
                ORDER BY requested_at, notification_uuid
                """, logger: self.logger
            ).compactMap { try Self.refundRequest(from: $0) }
        }
    }

    static func refundRequest(from row: PostgresRandomAccessRow) throws -> RefundRequest? {
        RefundRequestBody.decode(try row.value("body", as: String.self), appUserId: try row.value("app_user_id", as: String?.self))
    }
}
