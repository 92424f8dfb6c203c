public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: CreditStore {
    public func spendCredits(
        appId: String, appUserId: String, spendId: String, now: Date,
        decide: @escaping @Sendable (_ balance: Int) -> (CreditSpend, EventBatch)?
    ) async throws -> CreditSpendResult {
        // One writer: each spend reads the balance every spend committed or batched before it left.
        try await write { db in
            if let stored = try Self.creditSpend(db, appId: appId, appUserId: appUserId, spendId: spendId) { return .existing(stored) }
            let purchased =
                try Int.fetchOne(
                    db.cachedStatement(
                        sql: "SELECT COALESCE(SUM(credits), 0) FROM transactions WHERE app_id = ? AND app_user_id = ? AND cancellation_date IS NULL"),
                    arguments: [appId, appUserId]) ?? 0
            let balance = purchased - (try Self.creditsSpent(db, appId: appId, appUserId: appUserId))
            guard let (spend, events) = decide(balance) else { return .refused(balance: balance) }
            try db.cachedStatement(
                sql: """
                    INSERT INTO credit_spends (app_id, id, app_user_id, amount, reason, spent_at, balance_after) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            ).execute(arguments: [
                spend.appId, spend.id, spend.appUserId, spend.amount, spend.reason, StoredTime.ms(spend.spentAt), spend.balanceAfter,
            ])
            try Self.record(events, db: db, now: now)
            return .spent(spend)
        }
    }

    public func creditSpends(appId: String, appUserId: String, before: Int64?, limit: Int) async throws -> [RecordedCreditSpend] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT cursor, id, app_user_id, amount, reason, spent_at, balance_after FROM credit_spends
                        WHERE app_id = ? AND app_user_id = ? AND cursor < ? ORDER BY cursor DESC LIMIT ?
                        """), arguments: [appId, appUserId, before ?? Int64.max, limit]
            ).map { RecordedCreditSpend(cursor: $0["cursor"], spend: Self.creditSpend(from: $0, appId: appId)) }
        }
    }

    public func creditsSpent(appId: String, appUserId: String) async throws -> Int {
        try await read { db in try Self.creditsSpent(db, appId: appId, appUserId: appUserId) }
    }

    static func creditsSpent(_ db: Database, appId: String, appUserId: String) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT COALESCE(SUM(amount), 0) FROM credit_spends WHERE app_id = ? AND app_user_id = ?"),
            arguments: [appId, appUserId]) ?? 0
    }

    static func creditSpend(_ db: Database, appId: String, appUserId: String, spendId: String) throws -> CreditSpend? {
        try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT cursor, id, app_user_id, amount, reason, spent_at, balance_after FROM credit_spends
                    WHERE app_id = ? AND app_user_id = ? AND id = ?
                    """),
            arguments: [appId, appUserId, spendId]
        ).map { creditSpend(from: $0, appId: appId) }
    }

    static func creditSpend(from row: Row, appId: String) -> CreditSpend {
        CreditSpend(
            id: row["id"], appId: appId, appUserId: row["app_user_id"], amount: row["amount"], reason: row["reason"],
            spentAt: StoredTime.date(row["spent_at"] as Int64), balanceAfter: row["balance_after"])
    }
}
