public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: CreditStore {
    public func spendCredits(
        appId: String, appUserId: String, spendId: String, now: Date,
        decide: @escaping @Sendable (_ balance: Int) -> (CreditSpend, EventBatch)?
    ) async throws -> CreditSpendResult {
        let logger = self.logger
        return try await transaction { connection in
            // Spends of one user queue here, so each reads the balance the one before it left.
            // A purchase or refund may commit meanwhile: a purchase only adds, and a refund may
            // take the balance below zero whatever is spent (docs/CREDITS.md).
            try await AdvisoryLock.lock(["credits \(appId) \(appUserId)"], on: connection, logger: logger)
            if let stored = try await Self.creditSpend(connection, appId: appId, appUserId: appUserId, spendId: spendId, logger: logger) {
                return .existing(stored)
            }
            let purchased = try await Self.sum(
                "SELECT COALESCE(SUM(credits), 0)::BIGINT AS total FROM transactions "
                    + "WHERE app_id = $1 AND app_user_id = $2 AND cancellation_date IS NULL", appId, appUserId, connection, logger)
            let spent = try await Self.creditsSpent(connection, appId: appId, appUserId: appUserId, logger: logger)
            let balance = purchased - spent
            guard let (spend, events) = decide(balance) else { return .refused(balance: balance) }
            // Spends under one user's key are serialized by the lock above, so the key is
            // free here; another user's key of the same name is another spend.
            try await connection.execute(
                """
                INSERT INTO credit_spends (app_id, id, app_user_id, amount, reason, spent_at, balance_after)
                VALUES (\(spend.appId), \(spend.id), \(spend.appUserId), \(Int64(spend.amount)), \(spend.reason),
                        \(StoredTime.ms(spend.spentAt)), \(Int64(spend.balanceAfter)))
                """, logger: logger)
            try await Self.record(events, connection: connection, now: now, logger: logger)
            return .spent(spend)
        }
    }

    public func creditSpends(appId: String, appUserId: String, before: Int64?, limit: Int) async throws -> [RecordedCreditSpend] {
        let logger = self.logger
        return try await read { connection in
            try await connection.rows(
                """
                SELECT cursor, id, app_user_id, amount, reason, spent_at, balance_after FROM credit_spends
                WHERE app_id = \(appId) AND app_user_id = \(appUserId) AND cursor < \(before ?? Int64.max)
                ORDER BY cursor DESC LIMIT \(Int64(limit))
                """, logger: logger
            ).map { row in RecordedCreditSpend(cursor: try row.value("cursor"), spend: try Self.creditSpend(from: row, appId: appId)) }
        }
    }

    public func creditsSpent(appId: String, appUserId: String) async throws -> Int {
        try await read { connection in try await Self.creditsSpent(connection, appId: appId, appUserId: appUserId, logger: self.logger) }
    }

    static func creditsSpent(_ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger) async throws -> Int {
        try await Self.sum(
            "SELECT COALESCE(SUM(amount), 0)::BIGINT AS total FROM credit_spends WHERE app_id = $1 AND app_user_id = $2", appId, appUserId,
            connection, logger)
    }

    private static func sum(
        _ sql: String, _ appId: String, _ appUserId: String, _ connection: PostgresConnection, _ logger: Logger
    ) async throws -> Int {
        var bindings = PostgresBindings()
        bindings.append(appId)
        bindings.append(appUserId)
        let rows = try await connection.rows(PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger)
        return Int(try rows.first?.value("total", as: Int64.self) ?? 0)
    }

    static func creditSpend(
        _ connection: PostgresConnection, appId: String, appUserId: String, spendId: String, logger: Logger
    ) async throws -> CreditSpend? {
        try await connection.rows(
            """
            SELECT cursor, id, app_user_id, amount, reason, spent_at, balance_after FROM credit_spends
            WHERE app_id = \(appId) AND app_user_id = \(appUserId) AND id = \(spendId)
            """, logger: logger
        ).first.map { try creditSpend(from: $0, appId: appId) }
    }

    static func creditSpend(from row: PostgresRandomAccessRow, appId: String) throws -> CreditSpend {
        CreditSpend(
            id: try row.value("id"), appId: appId, appUserId: try row.value("app_user_id"), amount: Int(try row.value("amount", as: Int64.self)),
            reason: try row.value("reason"), spentAt: try row.date("spent_at"), balanceAfter: Int(try row.value("balance_after", as: Int64.self)))
    }
}
