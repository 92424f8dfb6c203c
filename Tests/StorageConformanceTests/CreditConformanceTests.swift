import Foundation
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    func coinPurchase(_ id: String) -> PurchaseEvidence.Purchase {
        PurchaseEvidence.Purchase(transactionId: id, originalTransactionId: id, productId: "coins", purchaseDate: t0)
    }

    @Test(
        "credits: 200 concurrent spends against 30 spend exactly 30, each once with its event; a replay spends nothing; a reused key is refused",
        arguments: StoreFactory.all)
    func creditSpends(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await grantSigned(store, [coinPurchase("p1"), coinPurchase("p2"), coinPurchase("p3")], tag: "coins")
        let credits = ManageCredits(store: store)
        let at = t0.addingTimeInterval(1)
        let outcomes = try await withThrowingTaskGroup(of: ManageCredits.SpendOutcome.self) { group in
            for i in 0..<200 {
                group.addTask {
                    try await credits.spend(
                        .init(appId: "app", appUserId: "alice", key: "k\(i)", amount: 1, reason: "shot"), now: at)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let spent = outcomes.compactMap { if case .spent(let spend, false) = $0 { spend } else { nil } }
        #expect(spent.count == 30 && outcomes.filter { $0 == .insufficient(balance: 0) }.count == 170)
        #expect(Set(spent.map(\.balanceAfter)) == Set(0..<30), "each spend left its own balance")
        #expect(try await store.creditsSpent(appId: "app", appUserId: "alice") == 30)
        let events = try await store.events(appId: "app", after: 0, types: [.creditsSpent], limit: 500).map(\.event)
        #expect(events.count == 30 && Set(events.compactMap { $0.details?.spendId }) == Set(spent.map(\.id)))
        #expect(events.allSatisfy { $0.entitlements?.creditBalance == $0.details?.creditBalance }, "each event's view has its spend taken")

        let first = try #require(spent.first)
        let replay = try await credits.spend(.init(appId: "app", appUserId: "alice", key: first.id, amount: 1, reason: "shot"), now: t0)
        #expect(replay == .spent(first, replayed: true))
        let reused = try await credits.spend(.init(appId: "app", appUserId: "bob", key: first.id, amount: 1, reason: "shot"), now: t0)
        #expect(reused == .keyReused(first))
        #expect(try await store.events(appId: "app", after: 0, types: [.creditsSpent], limit: 500).count == 30)

        // History: newest first, paged by cursor; the view takes the spends from the balance.
        let page = try await credits.history(appId: "app", appUserId: "alice", before: nil, limit: 20)
        #expect(page.balance == 0 && page.purchased == 30 && page.spent == 30 && page.spends.count == 20)
        let rest = try await credits.history(appId: "app", appUserId: "alice", before: page.spends.last?.cursor, limit: 20)
        #expect(rest.spends.count == 10 && Set((page.spends + rest.spends).map(\.spend.id)) == Set(spent.map(\.id)))
        #expect(zip(page.spends, page.spends.dropFirst()).allSatisfy { $0.cursor > $1.cursor })
        let view = try await ReadSubscriber(store: store)(appId: "app", appUserId: "alice", now: t0)
        #expect(view.creditBalance == 0 && view.creditsSpent == 30)
    }

    @Test("credits: a deleted customer's spends stay under the tombstone, and the balance with them", arguments: StoreFactory.all)
    func creditSpendsErased(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let user = "dave.deleted-me"
        try await grantSigned(store, [coinPurchase("d1")], user: user, tag: "d1")
        let outcome = try await ManageCredits(store: store).spend(
            .init(appId: "app", appUserId: user, key: "d-spend", amount: 4, reason: "potion"), now: t0)
        guard case .spent = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(try await store.tablesMentioning(user)["credit_spends"] == 1)
        let deletion = try #require(
            try await ManageCustomers(store: store).delete(appId: "app", appUserId: user, actor: AuditActor(name: "dpo", reason: "erasure"), now: t0))
        #expect(try await store.tablesMentioning(user).isEmpty)
        let history = try await ManageCredits(store: store).history(appId: "app", appUserId: deletion.tombstone, before: nil, limit: 10)
        #expect(history.balance == 6 && history.spends.map(\.spend.id) == ["d-spend"])
    }
}
