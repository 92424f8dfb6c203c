import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    @Test(
        "the ledger a page at a time: positions, not offsets; ties broken by transaction id and event; rows added meanwhile read once",
        arguments: StoreFactory.all)
    func ledgerPages(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "coins", type: .consumable, creditAmount: 10, priceMicros: 990_000, currency: "USD"),
            now: t0)
        /// Purchases of coins at the given offsets from t0 (several at one instant), granted once.
        func buy(_ ids: [String], at offsets: [TimeInterval], receipt: String) async throws {
            let purchases = zip(ids, offsets).map {
                PurchaseEvidence.Purchase(transactionId: $0, originalTransactionId: $0, productId: "coins", purchaseDate: t0.addingTimeInterval($1))
            }
            let submitted = try await SubmitEvidence(store: store)(submission(receipt: receipt), now: t0)
            let leased = try #require(try await lease(store, at: t0).first { $0.jobId == submitted.verification.jobId })
            _ = try await VerificationOutcomes(store: store).completeVerified(
                leased, verificationId: submitted.verification.id,
                evidence: PurchaseEvidence(source: .receipt, bundleId: "com.example", environment: "sandbox", purchases: purchases, renewals: [:]),
                report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0)
        }
        try await buy(["c3", "c1", "c2", "c5"], at: [60, 60, 60, 120], receipt: "ledger-1")
        let range = LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture)
        let whole = try await store.ledger(range).map(\.transactionId)
        #expect(whole == ["c1", "c2", "c3", "c5"], "purchase date, then transaction id")

        var query = range
        query.limit = 2
        let first = try await store.ledger(query)
        #expect(first.map(\.transactionId) == ["c1", "c2"])
        // Rows booked between two pages: one before the position is not read again, one after is.
        try await buy(["c0", "c4"], at: [0, 90], receipt: "ledger-2")
        query.after = LedgerPosition(try #require(first.last))
        let second = try await store.ledger(query)
        #expect(second.map(\.transactionId) == ["c3", "c4"])
        query.after = LedgerPosition(try #require(second.last))
        #expect(try await store.ledger(query).map(\.transactionId) == ["c5"])
        query.after = LedgerPosition(purchaseDate: t0.addingTimeInterval(120), transactionId: "c5", event: .purchase)
        #expect(try await store.ledger(query).isEmpty)

        let token = LedgerPosition(try #require(second.last)).token
        #expect(LedgerPosition(token: token) == LedgerPosition(try #require(second.last)), "the cursor survives a round trip")
        #expect(token.hasSuffix(".purchase.c4"), "the last entry's date, event and transaction id: \(token)")
        for bad in ["", "x", "12.purchase", "12.sale.c1", "a1.purchase.c1", "12.purchase.", "12.purchase.c\n1", String(repeating: "1", count: 2_000)]
        {
            #expect(LedgerPosition(token: bad) == nil, "\(bad.prefix(16))")
        }
        #expect(LedgerPosition(token: "12.refund.a.b")?.transactionId == "a.b", "a transaction id may hold dots")
    }
}
