public import Foundation
import Logging
public import Persistence
import PostgresNIO
import StorekeeperDomain

extension PostgresStore {
    public func owner(appId: String, originalTransactionId: String) async throws -> String? {
        try await read { connection in
            try await connection.rows(
                """
                SELECT app_user_id FROM ownership_bindings WHERE app_id = \(appId) AND original_transaction_id = \(originalTransactionId)
                """, logger: self.logger
            ).first.map { try $0.value("app_user_id", as: String.self) }
        }
    }

    public func notifications(appId: String, originalTransactionIds: [String], limit: Int) async throws -> [NotificationRecord] {
        let ids = Array(originalTransactionIds.prefix(500))
        guard !ids.isEmpty, limit > 0 else { return [] }
        return try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM notifications WHERE app_id = \(appId) AND original_transaction_id = ANY(\(ids))
                ORDER BY signed_date DESC NULLS LAST, received_at DESC, notification_uuid LIMIT \(Int64(limit))
                """, logger: self.logger
            ).map { row in
                var record = NotificationRecord(
                    appId: try row.value("app_id"), notificationUUID: try row.value("notification_uuid"),
                    notificationType: try row.value("notification_type"), subtype: try row.value("subtype"),
                    signedDate: try row.optionalDate("signed_date"), originalTransactionId: try row.value("original_transaction_id"),
                    environment: try row.value("environment"), payload: try row.value("payload"),
                    outcome: NotificationOutcome(rawValue: try row.value("outcome")))
                record.receivedAt = try row.date("received_at")
                record.verificationId = try row.value("verification_id")
                return record
            }
        }
    }

    public func recordNotification(_ write: NotificationWrite, now: Date) async throws -> NotificationResult {
        let notification = write.record
        let result = try await transaction { connection in
            // The primary key (app, notificationUUID) makes a second delivery a no-op.
            let inserted = try await connection.count(
                """
                INSERT INTO notifications (app_id, notification_uuid, notification_type, subtype, signed_date,
                    original_transaction_id, environment, payload, outcome, received_at)
                VALUES (\(notification.appId), \(notification.notificationUUID), \(notification.notificationType),
                    \(notification.subtype), \(StoredTime.ms(notification.signedDate)), \(notification.originalTransactionId),
                    \(notification.environment), \(notification.payload), \(notification.outcome.rawValue), \(StoredTime.ms(now)))
                ON CONFLICT (app_id, notification_uuid) DO NOTHING
                RETURNING 1
                """, logger: self.logger)
            guard inserted == 1 else { return NotificationResult(created: false, verification: nil) }
            let forwards = write.forwards(try await Self.endpoints(connection, appId: notification.appId, logger: self.logger))
            try await Self.enqueueForwards(
                connection, appId: notification.appId, notificationUUID: notification.notificationUUID, to: forwards, now: now,
                logger: self.logger)
            if let events = write.events { try await Self.record(events, connection: connection, now: now, logger: self.logger) }
            if let request = write.refundRequest { try await Self.insertRefundRequest(connection, request, now: now, logger: self.logger) }
            guard let submission = write.submission else { return NotificationResult(created: true, verification: nil) }
            let result = try await Self.accept(connection, submission.submission, now: now, decide: submission.decide, logger: self.logger)
            try await connection.execute(
                """
                UPDATE notifications SET verification_id = \(result.verification.id)
                WHERE app_id = \(notification.appId) AND notification_uuid = \(notification.notificationUUID)
                """, logger: self.logger)
            return NotificationResult(created: true, verification: result.verification)
        }
        return result
    }
}
