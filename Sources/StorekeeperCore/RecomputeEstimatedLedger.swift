import Foundation
public import Persistence
public import StorekeeperDomain

/// Books again, at what Apple charged, the ledger rows booked at the catalog's list price
/// (`estimated`) whose stored evidence carries Apple's signed price: every row from before the
/// ledger took the charged price (M0015) that was granted from a signed transaction or a
/// notification. A row granted from a receipt (verifyReceipt has no price) or a history pull
/// (the signed copies were not kept) stays estimated. Safe to run again and from several
/// processes: each row is written only while still estimated.
public struct RecomputeEstimatedLedger: Sendable {
    public typealias Store = LedgerRecomputeStore & CatalogStore
    /// The purchases a stored evidence holds, read as the grant job reads it (its signatures
    /// were checked when it was accepted); nil when it holds no signed purchase (a receipt, a
    /// history pull's ids).
    public typealias SignedPurchases = @Sendable (_ evidence: String) async -> [PurchaseEvidence.Purchase]?

    public struct Progress: Sendable, Hashable {
        /// Estimated rows read so far.
        public var read = 0
        /// Rows booked again at the charged price.
        public var recomputed = 0
        /// Rows that stay estimated: no signed price in their evidence.
        public var left = 0
    }

    let store: any Store
    let signedPurchases: SignedPurchases

    public init(store: any Store, signedPurchases: @escaping SignedPurchases) {
        self.store = store
        self.signedPurchases = signedPurchases
    }

    /// Runs over the app's estimated rows, `batch` at a time (each batch one transaction), and
    /// tells `progress` after each.
    public func callAsFunction(
        appId: String, commission: CommissionProgram, batch: Int = 500, progress: (Progress) -> Void = { _ in }
    ) async throws -> Progress {
        let catalog = Dictionary(try await store.products(appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { first, _ in first })
        var done = Progress()
        var after: Int64 = 0
        while true {
            let rows = try await store.estimatedLedgerRows(appId: appId, after: after, limit: max(1, batch))
            guard let last = rows.last else { break }
            after = last.id
            var purchases: [String: [String: PurchaseEvidence.Purchase]] = [:]
            var recomputed: [RecomputedLedgerRow] = []
            for row in rows {
                guard let transaction = row.transaction, let evidence = row.evidence else { continue }
                if purchases[evidence] == nil {
                    let read = await signedPurchases(evidence) ?? []
                    purchases[evidence] = Dictionary(read.map { ($0.transactionId, $0) }, uniquingKeysWith: { first, _ in first })
                }
                guard let signed = purchases[evidence]?[transaction.transactionId],
                    let booked = Self.recompute(
                        row, transaction: transaction, signed: signed, product: catalog[transaction.productId], commission: commission)
                else { continue }
                recomputed.append(booked)
            }
            let changed = recomputed.isEmpty ? 0 : try await store.recomputeLedger(appId: appId, rows: recomputed)
            done.read += rows.count
            done.recomputed += changed
            done.left += rows.count - changed
            progress(done)
        }
        return done
    }

    /// The row as the ledger rule books it with the signed copy's price, storefront and offer;
    /// who it was booked for, when and in what state are kept. Nil when the signed copy has no
    /// price, or for a refund whose share is no longer known (the refund was reversed since, and
    /// its booked amount was not the whole price).
    static func recompute(
        _ row: EstimatedLedgerRow, transaction: TransactionRecord, signed: PurchaseEvidence.Purchase, product: Product?,
        commission: CommissionProgram
    ) -> RecomputedLedgerRow? {
        guard let price = signed.price else { return nil }
        var record = transaction
        record.price = price
        record.storefront = record.storefront ?? signed.storefront
        record.offer = record.offer ?? signed.offer
        var share: Int?
        if row.entry.event != .purchase {
            if let percentage = transaction.revocationPercentage {
                share = percentage
            } else {
                // Reversed since: only a refund of the whole price is known to have been one.
                let listed = product?.priceMicros.map { $0 * Int64(transaction.quantity) }
                guard let booked = row.entry.priceMicros, let listed, abs(booked) == listed else { return nil }
            }
        }
        var entry = LedgerRule.entry(
            record, product: product, event: row.entry.event, state: row.entry.state, now: row.entry.recordedAt, refundedShare: share,
            commission: commission)
        entry.appUserId = row.entry.appUserId
        entry.imported = row.entry.imported
        return RecomputedLedgerRow(id: row.id, entry: entry, transaction: record)
    }
}
