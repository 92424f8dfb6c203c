import Foundation
import Logging
import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    public func appTransaction(appId: String, appUserId: String) async throws -> CustomerAppTransaction? {
        try await read { connection in try await Self.appTransaction(connection, appId: appId, appUserId: appUserId, logger: self.logger) }
    }

    static func appTransaction(
        _ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger
    ) async throws
        -> CustomerAppTransaction?
    {
        try await connection.rows("SELECT body FROM app_transactions WHERE app_id = \(appId) AND app_user_id = \(appUserId)", logger: logger)
            .first.flatMap { StoredJSON.decode(CustomerAppTransaction.self, try $0.value("body", as: String.self)) }
    }

    public func recordAppTransaction(appId: String, appUserId: String, _ record: CustomerAppTransaction) async throws -> CustomerAppTransaction {
        let signed = StoredTime.ms(record.signedDate) as Int64
        return try await transaction { connection in
            try await connection.execute(
                """
                INSERT INTO app_transactions (app_id, app_user_id, app_transaction_id, signed_date, body)
                VALUES (\(appId), \(appUserId), \(record.appTransactionId), \(signed), \(StoredJSON.encode(record)))
                ON CONFLICT (app_id, app_user_id) DO UPDATE SET
                    app_transaction_id = excluded.app_transaction_id, signed_date = excluded.signed_date, body = excluded.body
                WHERE excluded.signed_date >= app_transactions.signed_date
                """, logger: self.logger)
            return try await Self.appTransaction(connection, appId: appId, appUserId: appUserId, logger: self.logger) ?? record
        }
    }
}
