import Foundation
import GRDB
import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    public func appTransaction(appId: String, appUserId: String) async throws -> CustomerAppTransaction? {
        try await read { db in try Self.appTransaction(db, appId: appId, appUserId: appUserId) }
    }

    static func appTransaction(_ db: Database, appId: String, appUserId: String) throws -> CustomerAppTransaction? {
        StoredJSON.decode(
            CustomerAppTransaction.self,
            try String.fetchOne(
                db.cachedStatement(sql: "SELECT body FROM app_transactions WHERE app_id = ? AND app_user_id = ?"), arguments: [appId, appUserId]))
    }

    public func recordAppTransaction(appId: String, appUserId: String, _ record: CustomerAppTransaction) async throws -> CustomerAppTransaction {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO app_transactions (app_id, app_user_id, app_transaction_id, signed_date, body) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, app_user_id) DO UPDATE SET
                        app_transaction_id = excluded.app_transaction_id, signed_date = excluded.signed_date, body = excluded.body
                    WHERE excluded.signed_date >= app_transactions.signed_date
                    """,
                arguments: [appId, appUserId, record.appTransactionId, StoredTime.ms(record.signedDate) as Int64, StoredJSON.encode(record)])
            return try Self.appTransaction(db, appId: appId, appUserId: appUserId) ?? record
        }
    }
}
