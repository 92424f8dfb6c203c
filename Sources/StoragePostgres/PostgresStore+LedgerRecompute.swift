public import Persistence
import PostgresNIO
import StorekeeperDomain

extension PostgresStore {
    public func estimatedLedgerRows(appId: String, after: Int64, limit: Int) async throws -> [EstimatedLedgerRow] {
        let logger = self.logger
        return try await read { connection in
            let ledger = try await connection.rows(
                "SELECT * FROM ledger WHERE app_id = \(appId) AND estimated AND id > \(after) ORDER BY id LIMIT \(limit)", logger: logger)
            let ids = try ledger.map { try $0.value("transaction_id", as: String.self) }
            var transactions: [String: (TransactionRecord, String?)] = [:]
            for row in try await connection.rows(
                """
                SELECT t.*, r.data AS evidence_text FROM transactions t
                LEFT JOIN verifications v ON v.id = t.verification_id
                LEFT JOIN receipts r ON r.app_id = v.app_id AND r.hash = v.receipt_hash
                WHERE t.app_id = \(appId) AND t.transaction_id = ANY(\(ids))
                """, logger: logger)
            {
                let record = try Self.transaction(from: row)
                transactions[record.transactionId] = (record, try row.value("evidence_text", as: String?.self))
            }
            return try ledger.map { row in
                let found = transactions[try row.value("transaction_id", as: String.self)]
                return EstimatedLedgerRow(
                    id: try row.value("id"), entry: try Self.ledgerEntry(from: row), transaction: found?.0, evidence: found?.1)
            }
        }
    }

    public func recomputeLedger(appId: String, rows: [RecomputedLedgerRow]) async throws -> Int {
        let logger = self.logger
        return try await transaction { connection in
            var changed = 0
            for row in rows {
                let (entry, tx) = (row.entry, row.transaction)
                let updated = try await connection.count(
                    """
                    UPDATE ledger SET price_micros = \(entry.priceMicros), currency = \(entry.currency), estimated = \(entry.estimated),
                        storefront = \(entry.storefront), offer_type = \(entry.offer.map { Int64($0.type) }),
                        offer_identifier = \(entry.offer?.identifier), offer_discount_type = \(entry.offer?.discountType),
                        offer_period = \(entry.offer?.period), commission_rate = \(entry.commissionRate.map(Int64.init)),
                        proceeds_micros = \(entry.proceedsMicros)
                    WHERE id = \(row.id) AND app_id = \(appId) AND estimated
                    RETURNING id
                    """, logger: logger)
                guard updated > 0 else { continue }
                changed += 1
                try await connection.execute(
                    """
                    UPDATE transactions SET price_milliunits = \(tx.price?.milliunits), price_currency = \(tx.price?.currency),
                        storefront = \(tx.storefront), offer_type = \(tx.offer.map { Int64($0.type) }), offer_identifier = \(tx.offer?.identifier),
                        offer_discount_type = \(tx.offer?.discountType), offer_period = \(tx.offer?.period)
                    WHERE app_id = \(appId) AND transaction_id = \(tx.transactionId) AND price_milliunits IS NULL
                    """, logger: logger)
            }
            if changed > 0 { try await Self.dropFigures(connection, appId: appId, logger: logger) }
            return changed
        }
    }
}
