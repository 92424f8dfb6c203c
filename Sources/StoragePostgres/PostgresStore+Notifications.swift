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
            guard let submission = write.submission else { return NotificationResult(created: true, verification: nil) }
            let result = try await Self.accept(connection, submission.submission, now: now, decide: submission.decide, logger: self.logger)
            try await connection.execute(
                """
                UPDATE notifications SET verification_id = \(result.verification.id)
                WHERE app_id = \(notification.appId) AND notification_uuid = \(notification.notificationUUID)
                """, logger: self.logger)
            return NotificationResult(created: true, verification: result.verification)
        }
        if result.verification != nil { jobAnnouncer.committed([""]) }
        return result
    }
}
