public import StorekeeperDomain

/// Ledger rows booked at the catalog's list price (`estimated`: every row from before the ledger
/// took Apple's charged price, M0015, and rows whose evidence had no price), read with what may
/// hold their charged price, and written again once recomputed.
public protocol LedgerRecomputeStore: Sendable {
    /// The app's estimated rows after row `after` (a row id; 0 for the first), oldest first, at
    /// most `limit`, each with its transaction and the evidence that granted it.
    func estimatedLedgerRows(appId: String, after: Int64, limit: Int) async throws -> [EstimatedLedgerRow]
    /// In one transaction: each row written as recomputed where it is still estimated, its
    /// transaction given the charged price, storefront and offer where it has none, and, when any
    /// row changed, the app's kept figures dropped to be built again on the next read (they hold
    /// the old amounts). Returns the rows changed: a row recomputed by another run is left alone.
    func recomputeLedger(appId: String, rows: [RecomputedLedgerRow]) async throws -> Int
}

public struct EstimatedLedgerRow: Sendable, Hashable {
    public var id: Int64
    public var entry: LedgerEntry
    /// Nil when the row's transaction is not stored (nothing to recompute from).
    public var transaction: TransactionRecord?
    /// The stored evidence of the verification that granted the transaction (a receipt, a signed
    /// transaction, a notification's signed payload, a history pull's ids); nil when none is kept.
    public var evidence: String?

    public init(id: Int64, entry: LedgerEntry, transaction: TransactionRecord?, evidence: String?) {
        self.id = id
        self.entry = entry
        self.transaction = transaction
        self.evidence = evidence
    }
}

public struct RecomputedLedgerRow: Sendable, Hashable {
    public var id: Int64
    public var entry: LedgerEntry
    /// The transaction with what Apple's signed copy says was charged.
    public var transaction: TransactionRecord

    public init(id: Int64, entry: LedgerEntry, transaction: TransactionRecord) {
        self.id = id
        self.entry = entry
        self.transaction = transaction
    }
}
