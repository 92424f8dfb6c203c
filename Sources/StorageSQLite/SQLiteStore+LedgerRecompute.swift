import GRDB
public import Persistence
import StorekeeperDomain

extension SQLiteStore {
    public func estimatedLedgerRows(appId: String, after: Int64, limit: Int) async throws -> [EstimatedLedgerRow] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM ledger WHERE app_id = ? AND estimated = 1 AND id > ? ORDER BY id LIMIT ?"),
                arguments: [appId, after, limit]
            ).map { row in
                let transaction = try Row.fetchOne(
                    db.cachedStatement(
                        sql: """
                            SELECT t.*, r.data AS evidence_text FROM transactions t
                            LEFT JOIN verifications v ON v.id = t.verification_id
                            LEFT JOIN receipts r ON r.app_id = v.app_id AND r.hash = v.receipt_hash
                            WHERE t.app_id = ? AND t.transaction_id = ?
                            """), arguments: [appId, row["transaction_id"] as String])
                return EstimatedLedgerRow(
                    id: row["id"], entry: Self.ledgerEntry(from: row), transaction: transaction.map(Self.transaction(from:)),
                    evidence: transaction?["evidence_text"])
            }
        }
    }

    public func recomputeLedger(appId: String, rows: [RecomputedLedgerRow]) async throws -> Int {
        try await pool.write { db in
            var changed = 0
            for row in rows {
                let (entry, tx) = (row.entry, row.transaction)
                try db.cachedStatement(
                    sql: """
                        UPDATE ledger SET price_micros = ?, currency = ?, estimated = ?, storefront = ?, offer_type = ?, offer_identifier = ?,
                            offer_discount_type = ?, offer_period = ?, commission_rate = ?, proceeds_micros = ?
                        WHERE id = ? AND app_id = ? AND estimated = 1
                        """
                ).execute(arguments: [
                    entry.priceMicros, entry.currency, entry.estimated, entry.storefront, entry.offer?.type, entry.offer?.identifier,
                    entry.offer?.discountType, entry.offer?.period, entry.commissionRate, entry.proceedsMicros, row.id, appId,
                ])
                guard db.changesCount > 0 else { continue }
                changed += 1
                try db.cachedStatement(
                    sql: """
                        UPDATE transactions SET price_milliunits = ?, price_currency = ?, storefront = ?, offer_type = ?,
                            offer_identifier = ?, offer_discount_type = ?, offer_period = ?
                        WHERE app_id = ? AND transaction_id = ? AND price_milliunits IS NULL
                        """
                ).execute(arguments: [
                    tx.price?.milliunits, tx.price?.currency, tx.storefront, tx.offer?.type, tx.offer?.identifier, tx.offer?.discountType,
                    tx.offer?.period, appId, tx.transactionId,
                ])
            }
            if changed > 0 { try Self.dropFigures(db, appId: appId) }
            return changed
        }
    }
}
