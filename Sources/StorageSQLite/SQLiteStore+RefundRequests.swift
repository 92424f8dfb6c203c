public import Foundation
import GRDB
import JobQueue
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: RefundRequestStore {
    /// Stores a request with its notification; a pending one gets its job, due at once.
    static func insertRefundRequest(_ db: Database, _ request: RefundRequest, now: Date) throws {
        let nowMs = StoredTime.ms(now)
        try db.cachedStatement(
            sql: """
                INSERT INTO refund_requests (app_id, notification_uuid, transaction_id, app_user_id, state, job_id, requested_at, body)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (app_id, notification_uuid) DO NOTHING
                """
        ).execute(arguments: [
            request.appId, request.notificationUUID, request.transactionId, request.appUserId, request.state.rawValue, request.jobId,
            StoredTime.ms(request.requestedAt), RefundRequestBody.encode(request),
        ])
        guard db.changesCount == 1, request.state == .pending, let jobId = request.jobId else { return }
        try db.cachedStatement(sql: "INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at) VALUES (?, ?, ?, ?, 0, ?, ?)")
            .execute(arguments: [jobId, answerRefundRequestJobKind, request.notificationUUID, JobLifecycle.initial.rawValue, nowMs, nowMs])
    }

    public func refundRequest(appId: String, notificationUUID: String) async throws -> RefundRequest? {
        try await read { db in
            try Row.fetchOne(
                db.cachedStatement(sql: "SELECT app_user_id, body FROM refund_requests WHERE app_id = ? AND notification_uuid = ?"),
                arguments: [appId, notificationUUID]
            ).flatMap(Self.refundRequest(from:))
        }
    }

    public func refundRequest(jobId: String) async throws -> RefundRequest? {
        try await read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT app_user_id, body FROM refund_requests WHERE job_id = ?"), arguments: [jobId])
                .flatMap(Self.refundRequest(from:))
        }
    }

    public func finishRefundRequest(_ request: RefundRequest, events: EventBatch?, now: Date) async throws -> Bool {
        try await write { db in
            // Guarded by the state read: only a pending request ends, once.
            try db.cachedStatement(
                sql: "UPDATE refund_requests SET state = ?, body = ? WHERE app_id = ? AND notification_uuid = ? AND state = ?"
            ).execute(arguments: [
                request.state.rawValue, RefundRequestBody.encode(request), request.appId, request.notificationUUID,
                RefundRequest.State.pending.rawValue,
            ])
            guard db.changesCount == 1 else { return false }
            if let events { try Self.record(events, db: db, now: now) }
            return true
        }
    }

    public func refundRequests(appId: String, transactionId: String?, limit: Int) async throws -> [RefundRequest] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT app_user_id, body FROM refund_requests WHERE app_id = ? AND (? IS NULL OR transaction_id = ?)
                        ORDER BY requested_at DESC, notification_uuid LIMIT ?
                        """), arguments: [appId, transactionId, transactionId, limit]
            ).compactMap(Self.refundRequest(from:))
        }
    }

    public func openRefundRequests(appId: String, appUserId: String) async throws -> [RefundRequest] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT app_user_id, body FROM refund_requests WHERE app_id = ? AND app_user_id = ? AND state IN (?, ?)
                        ORDER BY requested_at, notification_uuid
                        """), arguments: [appId, appUserId, RefundRequest.State.pending.rawValue, RefundRequest.State.sent.rawValue]
            ).compactMap(Self.refundRequest(from:))
        }
    }

    static func refundRequest(from row: Row) -> RefundRequest? {
        RefundRequestBody.decode(row["body"], appUserId: row["app_user_id"])
    }
}
