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
        let reused = try await credits.spend(.init(appId: "app", appUserId: "alice", key: first.id, amount: 2, reason: "shot"), now: t0)
        #expect(reused == .keyReused(first))
        // A key is its user's own: bob's spend under alice's key is bob's, refused only for his
        // balance, and made once he has coins; neither user learns of the other's key.
        let bobBroke = try await credits.spend(.init(appId: "app", appUserId: "bob", key: first.id, amount: 1, reason: "shot"), now: t0)
        #expect(bobBroke == .insufficient(balance: 0))
        try await grantSigned(store, [coinPurchase("b1")], user: "bob", tag: "b1")
        let bobs = try await credits.spend(.init(appId: "app", appUserId: "bob", key: first.id, amount: 1, reason: "shot"), now: t0)
        guard case .spent(let bobSpend, replayed: false) = bobs else {
            Issue.record("bob's own spend under a key alice used: \(bobs)")
            return
        }
        #expect(bobSpend.appUserId == "bob" && bobSpend.id == first.id && bobSpend.balanceAfter == 9)
        let aliceAgain = try await credits.spend(.init(appId: "app", appUserId: "alice", key: first.id, amount: 1, reason: "shot"), now: t0)
        #expect(aliceAgain == .spent(first, replayed: true), "alice's spend is untouched by bob's")
        let recorded = try await store.events(appId: "app", after: 0, types: [.creditsSpent], limit: 500).map(\.event)
        #expect(recorded.count == 31 && Set(recorded.map(\.id)).count == 31, "bob's event is his own, not alice's id again")

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
        // The caller chose a key and a reason that name the customer.
        let outcome = try await ManageCredits(store: store).spend(
            .init(appId: "app", appUserId: user, key: "\(user)-potion", amount: 4, reason: "potion for Dave Q"), now: t0)
        guard case .spent = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(try await store.tablesMentioning(user)["credit_spends"] == 1)
        let fingerprint = SubscriberEvent.fingerprint(user)
        #expect(try await store.tablesMentioning(fingerprint)["events"] == 1, "the event's id is built from a hash of the id")
        let deletion = try #require(
            try await ManageCustomers(store: store).delete(appId: "app", appUserId: user, actor: AuditActor(name: "dpo", reason: "erasure"), now: t0))
        for needle in [user, "Dave Q", fingerprint] {
            let left = try await store.tablesMentioning(needle)
            #expect(left.isEmpty, "\(needle) still in \(left)")
        }
        let history = try await ManageCredits(store: store).history(appId: "app", appUserId: deletion.tombstone, before: nil, limit: 10)
        let spend = try #require(history.spends.first)
        #expect(history.balance == 6 && history.spends.count == 1 && spend.spend.id == CustomerErasure.spendId(cursor: spend.cursor))
        #expect(spend.spend.reason == CustomerErasure.erasedText && spend.spend.amount == 4)
        let event = try #require(try await store.events(appId: "app", after: 0, types: [.creditsSpent], limit: 10).first?.event)
        #expect(
            event.appUserId == deletion.tombstone && event.details?.spendId == spend.spend.id && event.details?.reason == CustomerErasure.erasedText)
        #expect(event.id.hasPrefix("evt_\(deletion.tombstone)_credits_spent_"), "\(event.id)")
    }
}

extension StorageConformanceTests {
    /// Apple asks about several of one holder's coin purchases at once: every answer is prepared
    /// while all the requests are still pending, in parallel, as the job runner would.
    func answerAtOnce(_ store: any StorekeeperStore, purchases: Int, spend: Int) async throws -> [String: Int] {
        let ids = (0..<purchases).map { "r\($0)" }
        try await grantSigned(store, ids.map(coinPurchase), tag: "packs")
        if spend > 0 {
            let spent = try await ManageCredits(store: store).spend(
                .init(appId: "app", appUserId: "alice", key: "used", amount: spend, reason: "shots"), now: t0.addingTimeInterval(1))
            guard case .spent = spent else { throw RefundTestFailure(description: "the spend failed: \(spent)") }
        }
        let ingest = IngestNotification(store: store)
        let policy = RefundPolicy(mode: .rules, customersConsented: true, declineWhenCreditsSpent: true)
        for (index, id) in ids.enumerated() {
            var request = IngestNotification.Notification(
                appId: "app", notificationUUID: "ask-\(id)", notificationType: "CONSUMPTION_REQUEST", subtype: nil,
                signedDate: t0.addingTimeInterval(10 + Double(index)), originalTransactionId: id, environment: "sandbox",
                payload: "payload-\(id)", version: .v2, purchase: .consumptionRequest(.init(transactionId: id, reason: "OTHER", policy: policy)))
            request.notificationType = "CONSUMPTION_REQUEST"
            #expect(try await ingest(request, now: t0.addingTimeInterval(10 + Double(index))).outcome == .consumptionRequested)
        }
        let answers = AnswerRefundRequests(store: store)
        var jobs: [String] = []
        for id in ids { jobs.append(try #require(try await store.refundRequest(appId: "app", notificationUUID: "ask-\(id)")?.jobId)) }
        let at = t0.addingTimeInterval(100)
        return try await withThrowingTaskGroup(of: (String, Int).self) { group in
            for (id, job) in zip(ids, jobs) {
                group.addTask {
                    guard case .send(_, let answer, _) = try await answers.prepare(jobId: job, policy: { _ in policy }, now: at) else {
                        throw RefundTestFailure(description: "no answer for \(id)")
                    }
                    return (id, answer.consumptionPercentage ?? -1)
                }
            }
            return try await group.reduce(into: [:]) { $0[$1.0] = $1.1 }
        }
    }

    @Test(
        "refund requests at once: two packs, half the coins spent: the first asked is unused, the second used; a hundred packs: the balance counted once",
        arguments: StoreFactory.all)
    func refundRequestsAtOnce(factory: StoreFactory) async throws {
        // Two packs of 10, 10 spent: 10 left, which only one of the two may count as its own.
        let two = try await answerAtOnce(try await make(factory), purchases: 2, spend: 10)
        #expect(two == ["r0": 0, "r1": 100_000], "\(two)")
        // A hundred packs of 10, 500 spent: the 50 asked first are unused, the 50 after wholly used.
        let hundred = try await answerAtOnce(try await make(factory), purchases: 100, spend: 500)
        #expect(hundred.count == 100 && hundred.values.filter { $0 == 0 }.count == 50 && hundred.values.filter { $0 == 100_000 }.count == 50)
        #expect((0..<50).allSatisfy { hundred["r\($0)"] == 0 } && (50..<100).allSatisfy { hundred["r\($0)"] == 100_000 })
    }
}

struct RefundTestFailure: Error, CustomStringConvertible {
    var description: String
}
