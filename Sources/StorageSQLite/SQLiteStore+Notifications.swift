public import Foundation
import GRDB
public import Persistence
import StorekeeperDomain

extension SQLiteStore {
    public func owner(appId: String, originalTransactionId: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(
                db, sql: "SELECT app_user_id FROM ownership_bindings WHERE app_id = ? AND original_transaction_id = ?",
                arguments: [appId, originalTransactionId])
        }
    }

    public func notifications(appId: String, originalTransactionIds: [String], limit: Int) async throws -> [NotificationRecord] {
        let ids = Array(originalTransactionIds.prefix(500))
        guard !ids.isEmpty, limit > 0 else { return [] }
        return try await read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM notifications WHERE app_id = ? AND original_transaction_id IN (\(placeholders(ids.count)))
                    ORDER BY signed_date DESC, received_at DESC, notification_uuid LIMIT ?
                    """, arguments: [appId] + StatementArguments(ids) + [limit]
            ).map { row in
                var record = NotificationRecord(
                    appId: row["app_id"], notificationUUID: row["notification_uuid"], notificationType: row["notification_type"],
                    subtype: row["subtype"], signedDate: StoredTime.date(row["signed_date"] as Int64?),
                    originalTransactionId: row["original_transaction_id"], environment: row["environment"], payload: row["payload"],
                    outcome: NotificationOutcome(rawValue: row["outcome"]))
                let received: Int64 = row["received_at"]
                record.receivedAt = StoredTime.date(received)
                record.verificationId = row["verification_id"]
                return record
            }
        }
    }

    public func recordNotification(_ write: NotificationWrite, now: Date) async throws -> NotificationResult {
        let notification = write.record
        return try await self.write { db in
            try db.execute(
                sql: """
                    INSERT INTO notifications (app_id, notification_uuid, notification_type, subtype, signed_date,
                        original_transaction_id, environment, payload, outcome, received_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, notification_uuid) DO NOTHING
                    """,
                arguments: [
                    notification.appId, notification.notificationUUID, notification.notificationType, notification.subtype,
                    StoredTime.ms(notification.signedDate), notification.originalTransactionId, notification.environment,
                    notification.payload, notification.outcome.rawValue, StoredTime.ms(now),
                ])
            guard db.changesCount == 1 else { return NotificationResult(created: false, verification: nil) }
            let forwards = write.forwards(try Self.endpoints(db, appId: notification.appId))
            try Self.enqueueForwards(db, appId: notification.appId, notificationUUID: notification.notificationUUID, to: forwards, now: now)
            if let events = write.events { try Self.record(events, db: db, now: now) }
            if let request = write.refundRequest { try Self.insertRefundRequest(db, request, now: now) }
            guard let submission = write.submission else { return NotificationResult(created: true, verification: nil) }
            let result = try Self.accept(db, submission.submission, now: now, decide: submission.decide)
            try db.execute(
                sql: "UPDATE notifications SET verification_id = ? WHERE app_id = ? AND notification_uuid = ?",
                arguments: [result.verification.id, notification.appId, notification.notificationUUID])
            return NotificationResult(created: true, verification: result.verification)
        }
    }
}
