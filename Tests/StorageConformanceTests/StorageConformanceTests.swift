import AppStoreModels
import Foundation
import JobQueue
import Persistence
import StorageSQLite
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import StorekeeperWire
import TestFixtures
import Testing

@Suite("storage conformance")
struct StorageConformanceTests {
    let t0 = referenceTime

    func submission(user: String = "alice", receipt: String = "cmVjZWlwdA==", refresh: Bool = false) -> EvidenceSubmission {
        EvidenceSubmission(appId: "app", appUserId: user, evidenceHash: "hash-\(receipt)", evidence: .receipt(base64: receipt), refresh: refresh)
    }

    func lease(_ store: any StorekeeperStore, at now: Date, limit: Int = 10) async throws -> [JobLease] {
        try await store.leaseJobs(kinds: ["verify_receipt"], limit: limit, owner: "test", now: now, leaseDuration: 30)
    }

    func response(_ transactions: [InAppTransaction]) -> VerifyReceiptResponse {
        VerifyReceiptResponse(status: .valid, environment: .sandbox, receipt: ReceiptInfo(bundleId: "com.example", inApp: transactions))
    }

    func coins(_ id: String) -> InAppTransaction {
        InAppTransaction(
            productId: "coins", transactionId: id, originalTransactionId: id, purchaseDate: referenceTime, originalPurchaseDate: referenceTime)
    }

    let request = GrantRequest(appId: "app", bundleId: "com.example", bindingPolicy: .refuse)
    let catalog = [Product(productId: "coins", type: .consumable, creditAmount: 10, priceMicros: 1_000_000, currency: "EUR")]

    /// A store with the catalog grants are planned from (read in the grant's own transaction).
    func make(_ factory: StoreFactory) async throws -> any StorekeeperStore {
        let store = try await factory.make()
        try await store.seedProducts(appId: "app", products: catalog, now: t0)
        return store
    }

    @Test("a receipt is stored once per user; the same post returns the same verification", arguments: StoreFactory.all)
    func dedupe(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let first = try await SubmitEvidence(store: store)(submission(), now: t0)
        let again = try await SubmitEvidence(store: store)(submission(), now: t0.addingTimeInterval(1))
        let otherUser = try await SubmitEvidence(store: store)(submission(user: "bob"), now: t0)
        #expect(first.created && !again.created && otherUser.created)
        #expect(first.verification.id == again.verification.id)
        #expect(otherUser.verification.id != first.verification.id)
        #expect(try await store.jobCounts()[.available] == 2)
        // Refresh of a verification still pending returns it too; no second job.
        let refreshPending = try await SubmitEvidence(store: store)(submission(refresh: true), now: t0)
        #expect(!refreshPending.created)
    }

    @Test("a lease is exclusive, expires, and only its holder can finish the job", arguments: StoreFactory.all)
    func leasing(factory: StoreFactory) async throws {
        let store = try await factory.make()
        _ = try await SubmitEvidence(store: store)(submission(), now: t0)
        let first = try #require(try await lease(store, at: t0).first)
        #expect(first.attempt == 1)
        #expect(try await lease(store, at: t0.addingTimeInterval(29)).isEmpty)
        // The holder dies; after expiry another runner takes the job with a new token.
        let second = try #require(try await lease(store, at: t0.addingTimeInterval(31)).first)
        #expect(second.jobId == first.jobId && second.attempt == 2 && second.token != first.token)
        #expect(try await store.completeJob(first, now: t0.addingTimeInterval(32)) == false)
        #expect(try await store.completeJob(second, now: t0.addingTimeInterval(32)) == true)
        #expect(try await lease(store, at: t0.addingTimeInterval(100)).isEmpty)
        #expect(try await store.jobCounts()[.completed] == 1)
    }

    @Test("a retried job is not leased before its time, and is after", arguments: StoreFactory.all)
    func retryTime(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submitted = try await SubmitEvidence(store: store)(submission(), now: t0)
        let held = try #require(try await lease(store, at: t0).first)
        let report = AttemptReport(statuses: [21005], environment: nil, reason: "apple_receipt_server_unavailable")
        #expect(
            try await VerificationOutcomes(store: store).scheduleRetry(
                held, verificationId: submitted.verification.id, report: report, at: t0.addingTimeInterval(10), now: t0))
        let v = try #require(try await store.verification(id: submitted.verification.id))
        #expect(v.state == .retryScheduled && v.nextAttemptAt == t0.addingTimeInterval(10) && v.appleStatuses == [21005])
        #expect(try await lease(store, at: t0.addingTimeInterval(9)).isEmpty)
        #expect(try await lease(store, at: t0.addingTimeInterval(10)).count == 1)
        #expect(try await store.nextJobDue() != nil)
    }

    @Test("granting happens once, in the job's transaction; a stale lease writes nothing", arguments: StoreFactory.all)
    func grantOnce(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let submitted = try await SubmitEvidence(store: store)(submission(), now: t0)
        let stale = try #require(try await lease(store, at: t0).first)
        let current = try #require(try await lease(store, at: t0.addingTimeInterval(31)).first)
        let report = AttemptReport(statuses: [21007, 0], environment: "sandbox", reason: nil)
        let lost = try await VerificationOutcomes(store: store).completeVerified(
            stale, verificationId: submitted.verification.id,
            evidence: PurchaseEvidence(verifyReceipt: response([coins("1")]), environment: .sandbox)!,
            report: report, request: request, now: t0.addingTimeInterval(32))
        guard case .leaseLost = lost else {
            Issue.record("a stale lease must not grant")
            return
        }
        #expect(try await store.countTransactions(appId: "app") == 0)
        let granted = try await VerificationOutcomes(store: store).completeVerified(
            current, verificationId: submitted.verification.id,
            evidence: PurchaseEvidence(verifyReceipt: response([coins("1")]), environment: .sandbox)!,
            report: report, request: request, now: t0.addingTimeInterval(32))
        guard case .granted(let summary) = granted else {
            Issue.record("expected a grant")
            return
        }
        #expect(summary.granted == ["1"] && summary.creditsAdded == 10)
        // A manual retry runs the job again: nothing is granted twice.
        #expect(try await RequeueVerification(store: store)(verificationId: submitted.verification.id, now: t0.addingTimeInterval(40)) == .requeued)
        let rerun = try #require(try await lease(store, at: t0.addingTimeInterval(41)).first)
        let again = try await VerificationOutcomes(store: store).completeVerified(
            rerun, verificationId: submitted.verification.id,
            evidence: PurchaseEvidence(verifyReceipt: response([coins("1"), coins("2")]), environment: .sandbox)!,
            report: report, request: request, now: t0.addingTimeInterval(42))
        guard case .granted(let second) = again else {
            Issue.record("expected a grant")
            return
        }
        #expect(second.granted == ["2"] && second.alreadyGranted == ["1"])
        #expect(try await store.countTransactions(appId: "app") == 2)
        // One event per change, numbered per subscriber, each with the entitlements it left.
        let events = try await store.events(appId: "app", after: 0, types: [], limit: 10).map(\.event)
        #expect(events.map(\.type) == [.consumablePurchase, .consumablePurchase])
        #expect(events.map(\.transactionId) == ["1", "2"] && events.map(\.sequence) == [1, 2])
        #expect(events.map { $0.entitlements?.creditBalance } == [10, 20])
        #expect(events.allSatisfy { $0.appUserId == "alice" && $0.source == .receipt && $0.environment == "sandbox" })
        let transactions = try await store.transactions(appId: "app", appUserId: "alice")
        #expect(transactions.map(\.credits).reduce(0, +) == 20)
        let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
        #expect(ledger.count == 2)
        #expect(try await store.ledger(LedgerQuery(appId: "app", environment: "production", from: .distantPast, to: .distantFuture)).isEmpty)
        let v = try #require(try await store.verification(id: submitted.verification.id))
        #expect(v.state == .verified && v.environment == "sandbox" && v.appleStatuses == [21007, 0, 21007, 0])
    }

    @Test("a refund and its reversal: revoked, reinstated with its time, both in the ledger", arguments: StoreFactory.all)
    func refundReversal(factory: StoreFactory) async throws {
        let store = try await make(factory)
        var refunded = coins("1")
        refunded.cancellationDateMs = .milliseconds(t0.addingTimeInterval(5))
        var step = 0
        func grant(_ transaction: InAppTransaction, _ request: GrantRequest) async throws -> GrantSummary? {
            step += 1
            let submitted = try await SubmitEvidence(store: store)(submission(receipt: "r\(step)"), now: t0)
            let leased = try #require(try await lease(store, at: t0).first { $0.jobId == submitted.verification.jobId })
            guard
                case .granted(let summary) = try await VerificationOutcomes(store: store).completeVerified(
                    leased, verificationId: submitted.verification.id,
                    evidence: PurchaseEvidence(verifyReceipt: response([transaction]), environment: .sandbox)!,
                    report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0)
            else { return nil }
            return summary
        }
        _ = try await grant(coins("1"), request)
        #expect(try await grant(refunded, request)?.revoked == ["1"])
        var reversal = request
        reversal.reversesRefunds = true
        reversal.evidenceSignedAt = t0.addingTimeInterval(100)
        #expect(try await grant(coins("1"), reversal)?.reinstated == ["1"])
        let stored = try #require(try await store.transactions(appId: "app", appUserId: "alice").first)
        #expect(stored.cancellationDate == nil && stored.reinstatedAt == t0.addingTimeInterval(100))
        var stale = request
        stale.evidenceSignedAt = t0.addingTimeInterval(50)
        #expect(try await grant(refunded, stale)?.revoked == [])
        let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
        #expect(ledger.map(\.event) == [.purchase, .refund, .refundReversed] && ledger.map(\.priceMicros) == [1_000_000, -1_000_000, 1_000_000])
    }

    /// Grants `purchases` as verified StoreKit 2 evidence for `user`, through a submission of its
    /// own (`tag` names it), in the job's transaction like a grant job.
    func grantSigned(
        _ store: any StorekeeperStore, _ purchases: [PurchaseEvidence.Purchase], user: String = "alice", tag: String,
        reverses: Bool = false, signedAt: Date? = nil, hints: [String: String] = [:]
    ) async throws {
        var evidenceSubmission = submission(user: user, receipt: tag)
        evidenceSubmission.hints = hints
        let submitted = try await SubmitEvidence(store: store)(evidenceSubmission, now: t0)
        let leased = try #require(try await lease(store, at: t0).first { $0.jobId == submitted.verification.jobId })
        var grantRequest = request
        grantRequest.reversesRefunds = reverses
        grantRequest.evidenceSignedAt = signedAt
        let evidence = PurchaseEvidence(source: .signedTransaction, bundleId: "com.example", environment: "sandbox", purchases: purchases)
        let outcome = try await VerificationOutcomes(store: store).completeVerified(
            leased, verificationId: submitted.verification.id, evidence: evidence,
            report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: grantRequest, now: t0)
        guard case .granted = outcome else {
            Issue.record("\(tag) was not granted: \(outcome)")
            return
        }
    }

    @Test(
        "an import's grant: its transactions and ledger rows are marked imported; a refund seen live afterwards is not", arguments: StoreFactory.all)
    func importedRows(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.seedProducts(
            appId: "app", products: [Product(productId: "removeads", type: .nonConsumable, priceMicros: 2_990_000, currency: "USD")], now: t0)
        let bought = PurchaseEvidence.Purchase(transactionId: "1", originalTransactionId: "1", productId: "removeads", purchaseDate: t0)
        try await grantSigned(store, [bought], tag: "i1", hints: [ImportCustomers.hint: "original_transaction_id"])
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "2", originalTransactionId: "2", productId: "removeads", purchaseDate: t0)], tag: "i2")
        #expect(try await store.transactions(appId: "app", appUserId: "alice").map(\.imported) == [true, false])
        var refunded = bought
        refunded.cancellationDate = t0.addingTimeInterval(60)
        try await grantSigned(store, [refunded], tag: "i3", signedAt: t0.addingTimeInterval(61))
        let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
        #expect(
            ledger.map { "\($0.transactionId) \($0.event.rawValue) \($0.imported)" } == ["1 purchase true", "1 refund false", "2 purchase false"],
            "a purchase date's rows by transaction id, then event")
    }

    @Test(
        "revenue: the charged price and storefront round-trip on the transaction; the ledger row keeps its offer, commission and proceeds",
        arguments: StoreFactory.all)
    func revenue(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.seedProducts(
            appId: "app", products: [Product(productId: "removeads", type: .nonConsumable, priceMicros: 2_990_000, currency: "USD")], now: t0)
        var bought = PurchaseEvidence.Purchase(transactionId: "1", originalTransactionId: "1", productId: "removeads", purchaseDate: t0)
        bought.price = ChargedPrice(milliunits: 3_490, currency: "EUR")
        bought.storefront = "FRA"
        bought.offer = PurchaseOffer(type: 3, identifier: "SPRING", discountType: "PAY_UP_FRONT", period: "P1M")
        try await grantSigned(store, [bought], tag: "r1")
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "2", originalTransactionId: "2", productId: "removeads", purchaseDate: t0)], tag: "r2")
        let stored = try await store.transactions(appId: "app", appUserId: "alice")
        #expect(stored.map(\.price) == [ChargedPrice(milliunits: 3_490, currency: "EUR"), nil] && stored.map(\.storefront) == ["FRA", nil])
        let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
        #expect(ledger.map(\.priceMicros) == [3_490_000, 2_990_000] && ledger.map(\.currency) == ["EUR", "USD"])
        #expect(ledger.map(\.estimated) == [false, true] && ledger.map(\.storefront) == ["FRA", nil])
        #expect(ledger.first?.offer == bought.offer && ledger.last?.offer == nil)
        #expect(ledger.map(\.commissionRate) == [3_000, 3_000] && ledger.map(\.proceedsMicros) == [2_443_000, 2_093_000])
    }

    @Test(
        "analytics reads: an app's transactions of one environment bought before an instant, every user's, oldest first; its subscriptions",
        arguments: StoreFactory.all)
    func analyticsReads(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.seedProducts(appId: "app", products: [Product(productId: "monthly", type: .autoRenewable, duration: "P1M")], now: t0)
        for (id, user, offset) in [("2", "bob", 3_600.0), ("1", "alice", 0)] {
            var purchase = PurchaseEvidence.Purchase(
                transactionId: id, originalTransactionId: id, productId: "monthly", purchaseDate: t0.addingTimeInterval(offset))
            purchase.expiresDate = t0.addingTimeInterval(offset + 30 * 86_400)
            try await grantSigned(store, [purchase], user: user, tag: "m\(id)")
        }
        #expect(
            try await store.transactions(appId: "app", environment: "sandbox", purchasedBefore: t0.addingTimeInterval(3_600)).map(\.transactionId)
                == ["1"])
        let both = try await store.transactions(appId: "app", environment: "sandbox", purchasedBefore: t0.addingTimeInterval(7_200))
        #expect(both.map(\.transactionId) == ["1", "2"] && both.map(\.appUserId) == ["alice", "bob"])
        #expect(try await store.transactions(appId: "app", environment: "production", purchasedBefore: .distantFuture).isEmpty)
        #expect(try await store.transactions(appId: "other", environment: "sandbox", purchasedBefore: .distantFuture).isEmpty)
        let facts = try await store.subscriptions(appId: "app", environment: "sandbox")
        #expect(facts.map(\.originalTransactionId) == ["1", "2"] && facts.map(\.appUserId) == ["alice", "bob"])
        #expect(try await store.subscriptions(appId: "app", environment: "production").isEmpty)
    }

    @Test(
        "kept figures: built from the history on the first read, then kept by each grant, a refund and a catalog change; equal to the full computation",
        arguments: StoreFactory.all)
    func keptFigures(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let day: TimeInterval = 86_400
        try await store.seedProducts(
            appId: "app",
            products: [
                Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 4_990_000, currency: "USD"),
                Product(productId: "coins", type: .consumable, creditAmount: 100, priceMicros: 990_000, currency: "USD"),
            ], now: t0)
        func period(_ id: String, original: String, from start: TimeInterval, days: TimeInterval, trial: Bool = false) -> PurchaseEvidence.Purchase {
            var purchase = PurchaseEvidence.Purchase(
                transactionId: id, originalTransactionId: original, productId: "monthly", purchaseDate: t0.addingTimeInterval(start))
            purchase.expiresDate = t0.addingTimeInterval(start + days * day)
            purchase.price = ChargedPrice(milliunits: trial ? 0 : 4_990, currency: "EUR")
            if trial { purchase.offer = PurchaseOffer(type: PurchaseOffer.introductory, discountType: PurchaseOffer.freeTrial, period: "P1W") }
            return purchase
        }
        /// The figures read through the store equal those computed from every transaction, at
        /// instants on and between midnights, by day, week and month; revenue days equal the ledger's.
        func expectAgreement(_ label: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let catalog = Dictionary(try await store.products(appId: "app").map { ($0.productId, $0) }, uniquingKeysWith: { a, _ in a })
            let transactions = try await store.transactions(appId: "app", environment: "sandbox", purchasedBefore: .distantFuture)
            let facts = try await store.subscriptions(appId: "app", environment: "sandbox")
            for now in [t0.addingTimeInterval(20 * day), t0.addingTimeInterval(45 * day + 7_777.5), t0.addingTimeInterval(90 * day)] {
                for interval in ReportInterval.allCases {
                    let from = t0.addingTimeInterval(-2 * day)
                    let kept = try await ReadSubscriptionMetrics(store: store)(
                        appId: "app", environment: "sandbox", from: from, to: now, interval: interval, now: now, reporting: nil)
                    let full = SubscriptionMetrics.build(
                        transactions: transactions, facts: facts, catalog: catalog, interval: interval, from: from, to: now, now: now)
                    #expect(kept == full, "\(label): \(interval) at \(now)", sourceLocation: sourceLocation)
                }
            }
            let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
            let days = try await store.revenueDays(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture)
            #expect(days == RevenueDay.grouping(ledger), "\(label): revenue days", sourceLocation: sourceLocation)
            let to = t0.addingTimeInterval(50 * day + 3_600)
            let revenue = try await ReadRevenue(store: store)(
                appId: "app", environment: "sandbox", from: t0.addingTimeInterval(3_600), to: to, interval: .week, reporting: nil)
            let inRange = ledger.filter { $0.purchaseDate >= t0.addingTimeInterval(3_600) && $0.purchaseDate < to }
            #expect(revenue == RevenueReport.build(inRange, interval: .week), "\(label): revenue", sourceLocation: sourceLocation)
        }
        try await grantSigned(store, [period("1", original: "1", from: 3_600, days: 30)], tag: "k1")
        try await expectAgreement("built on the first read")
        // Kept from here on by each grant: a renewal, a trial that converts, one that does not, credits.
        try await grantSigned(store, [period("2", original: "1", from: 3_600 + 30 * day, days: 30)], tag: "k2")
        try await grantSigned(
            store, [period("10", original: "10", from: 2 * day, days: 7, trial: true), period("11", original: "10", from: 9 * day, days: 30)],
            user: "bob", tag: "k3")
        try await grantSigned(store, [period("20", original: "20", from: 40 * day + 5, days: 7, trial: true)], user: "carol", tag: "k4")
        var coins = PurchaseEvidence.Purchase(
            transactionId: "30", originalTransactionId: "30", productId: "coins", purchaseDate: t0.addingTimeInterval(5 * day))
        try await grantSigned(store, [coins], user: "dave", tag: "k5")
        try await expectAgreement("kept by grants")
        // A refund of the renewal and of the coins, told later.
        var refunded = period("2", original: "1", from: 3_600 + 30 * day, days: 30)
        refunded.cancellationDate = t0.addingTimeInterval(40 * day)
        coins.cancellationDate = t0.addingTimeInterval(6 * day)
        try await grantSigned(store, [refunded, coins], tag: "k6", signedAt: t0.addingTimeInterval(41 * day))
        try await expectAgreement("kept through refunds")
        // A catalog change drops the figures; the next read builds them again with the new catalog.
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 5_990_000, currency: "USD"),
            now: t0)
        try await grantSigned(store, [period("40", original: "40", from: 10 * day, days: 30)], user: "erin", tag: "k7")
        try await expectAgreement("built again after a catalog change")
        #expect(try await store.metricReadout(appId: "other", environment: "sandbox", now: t0, interval: .month).days.isEmpty)
    }

    @Test("a customer's notifications: those about their original transactions, newest signed first, at most the limit", arguments: StoreFactory.all)
    func customerNotifications(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "1", originalTransactionId: "1", productId: "coins", purchaseDate: t0)], tag: "n1")
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "2", originalTransactionId: "2", productId: "coins", purchaseDate: t0)], user: "bob",
            tag: "n2")
        for (uuid, original, offset) in [("u1", "1", 10.0), ("u2", "1", 20.0), ("u3", "2", 30.0), ("u4", "1", 5.0)] {
            let record = NotificationRecord(
                appId: "app", notificationUUID: uuid, notificationType: "DID_RENEW", subtype: nil, signedDate: t0.addingTimeInterval(offset),
                originalTransactionId: original, environment: "Sandbox", payload: "{}", outcome: .unowned)
            _ = try await store.recordNotification(NotificationWrite(record: record, submission: nil, events: nil, forwards: { _ in [] }), now: t0)
        }
        let read = ReadPurchases(store: store)
        let alice = try await read.notifications(appId: "app", appUserId: "alice", limit: 10)
        #expect(alice.map(\.notificationUUID) == ["u2", "u1", "u4"] && alice.allSatisfy { $0.receivedAt == t0 && $0.outcome == .unowned })
        #expect(try await read.notifications(appId: "app", appUserId: "alice", limit: 1).map(\.notificationUUID) == ["u2"])
        #expect(try await read.notifications(appId: "app", appUserId: "bob", limit: 10).map(\.notificationUUID) == ["u3"])
        #expect(try await read.notifications(appId: "app", appUserId: "nobody", limit: 10).isEmpty)
        #expect(try await read.notifications(appId: "other", appUserId: "alice", limit: 10).isEmpty)

        // The health page's counts: by when they were received, per app, type and outcome.
        let later = NotificationRecord(
            appId: "app", notificationUUID: "u5", notificationType: "TEST", subtype: nil, signedDate: t0, originalTransactionId: nil,
            environment: "Sandbox", payload: "{}", outcome: .test)
        _ = try await store.recordNotification(NotificationWrite(record: later, submission: nil, events: nil, forwards: { _ in [] }), now: t0 + 60)
        let operations = ReadOperations(store: store)
        #expect(
            try await operations.notificationCounts(since: t0) == [
                NotificationCount(appId: "app", notificationType: "DID_RENEW", outcome: .unowned, count: 4),
                NotificationCount(appId: "app", notificationType: "TEST", outcome: .test, count: 1),
            ])
        #expect(
            try await operations.notificationCounts(since: t0 + 1) == [
                NotificationCount(appId: "app", notificationType: "TEST", outcome: .test, count: 1)
            ])
    }

    @Test(
        "a refresh asked by an operator is audited in the transaction that accepts it, with its verification as subject", arguments: StoreFactory.all)
    func refreshAudited(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "1", originalTransactionId: "1", productId: "coins", purchaseDate: t0)], tag: "f1")
        let refresh = RefreshSubscriber(store: store)
        let quiet = try #require(try await refresh(appId: "app", appUserId: "alice", now: t0))
        let asked = try #require(try await refresh(appId: "app", appUserId: "alice", actor: AuditActor(name: "console:ops", reason: ""), now: t0))
        let nobody = try await refresh(appId: "app", appUserId: "nobody", actor: AuditActor(name: "ops", reason: ""), now: t0)
        #expect(quiet.created && asked.created && nobody == nil)
        let entries = try await store.auditEntries(appId: "app", appUserId: "alice", limit: 10).map(\.entry)
        #expect(entries.map(\.action) == ["subscriber_refreshed"] && entries.map(\.subject) == [asked.verification.id])
        #expect(entries.first?.actor == "console:ops" && entries.first?.appUserId == "alice")
    }

    @Test("appTransactionId: stored with a new transaction, learnt once by one first seen without it, and found by it", arguments: StoreFactory.all)
    func appTransactionIds(factory: StoreFactory) async throws {
        let store = try await make(factory)
        func purchase(_ id: String, _ appTransactionId: String?) -> PurchaseEvidence.Purchase {
            var purchase = PurchaseEvidence.Purchase(transactionId: id, originalTransactionId: id, productId: "coins", purchaseDate: t0)
            purchase.appTransactionId = appTransactionId
            return purchase
        }
        try await grantSigned(store, [purchase("1", nil), purchase("2", "7001")], user: "alice", tag: "a1")
        try await grantSigned(store, [purchase("3", "7001")], user: "bob", tag: "a2")
        #expect(try await store.transactions(appId: "app", appTransactionId: "7001").map(\.transactionId) == ["2", "3"])
        // "1" learns its id from a signed copy; a later copy naming another id changes nothing.
        try await grantSigned(store, [purchase("1", "7001")], user: "alice", tag: "a3")
        try await grantSigned(store, [purchase("1", "9999")], user: "alice", tag: "a4")
        let found = try await store.transactions(appId: "app", appTransactionId: "7001")
        #expect(found.map(\.transactionId) == ["1", "2", "3"] && Set(found.map(\.appUserId)) == ["alice", "bob"])
        #expect(try await store.transactions(appId: "app", appTransactionId: "9999").isEmpty)
        #expect(try await store.transactions(appId: "other", appTransactionId: "7001").isEmpty)
        #expect(try await store.transactions(appId: "app", appUserId: "alice").map(\.appTransactionId) == ["7001", "7001"])
    }

    @Test(
        "customer search: by transaction id, original transaction id, appAccountToken (learnt once) and e-mail, exactly; a customer's verifications newest first",
        arguments: StoreFactory.all)
    func customerSearch(factory: StoreFactory) async throws {
        let store = try await make(factory)
        func purchase(_ id: String, original: String, token: String?) -> PurchaseEvidence.Purchase {
            var purchase = PurchaseEvidence.Purchase(transactionId: id, originalTransactionId: original, productId: "coins", purchaseDate: t0)
            purchase.appAccountToken = token
            return purchase
        }
        let token = "5f0c2b9e-7d6a-8c1e-9b2a-0d4e6f8a1c3b"
        try await grantSigned(store, [purchase("10", original: "10", token: nil), purchase("11", original: "10", token: token)], tag: "s1")
        try await grantSigned(store, [purchase("20", original: "20", token: nil)], user: "bob", tag: "s2")
        // "20" learns its token from a later signed copy; a copy naming another changes nothing.
        try await grantSigned(store, [purchase("20", original: "20", token: "aaaaaaaa-0000-8000-8000-000000000001")], user: "bob", tag: "s3")
        try await grantSigned(store, [purchase("20", original: "20", token: "bbbbbbbb-0000-8000-8000-000000000002")], user: "bob", tag: "s4")
        _ = try await store.updateAttributes(appId: "app", appUserId: "carol", now: t0) { _ in
            .success(SubscriberAttributes(email: " Carol.Smith@Example.COM"))
        }
        func search(_ text: String, app: String = "app") async throws -> [String] {
            try await store.customerMatches(appId: app, text: text, limit: 10).map { "\($0.appUserId) \($0.field.rawValue)" }
        }
        #expect(try await search("11") == ["alice transactionId"])
        #expect(try await search("10") == ["alice originalTransactionId", "alice transactionId"])
        #expect(try await search(token.uppercased()) == ["alice appAccountToken"])
        #expect(try await search("aaaaaaaa-0000-8000-8000-000000000001") == ["bob appAccountToken"])
        #expect(try await search("bbbbbbbb-0000-8000-8000-000000000002").isEmpty)
        #expect(try await search("carol.smith@example.com") == ["carol email"])
        for miss in ["carol.smith@example.co", "1", "%", "carol%"] { #expect(try await search(miss).isEmpty, "\(miss)") }
        #expect(try await search("11", app: "other").isEmpty)
        #expect(try await store.customerMatches(appId: "app", text: "10", limit: 1).count == 1)
        // An e-mail removed is found no more.
        _ = try await store.updateAttributes(appId: "app", appUserId: "carol", now: t0) { _ in
            .success(SubscriberAttributes(email: "c@example.com", displayName: "C"))
        }
        #expect(try await search("carol.smith@example.com").isEmpty)
        #expect(try await search("C@EXAMPLE.COM") == ["carol email"])
        let bobs = try await store.verifications(appId: "app", appUserId: "bob", limit: 10)
        #expect(bobs.count == 3 && Set(bobs.map(\.appUserId)) == ["bob"])
        #expect(try await store.verifications(appId: "app", appUserId: "bob", limit: 2).map(\.id) == Array(bobs.map(\.id).prefix(2)))
        #expect(try await store.verifications(appId: "other", appUserId: "bob", limit: 10).isEmpty)
        #expect(bobs.map(\.createdAt) == bobs.map(\.createdAt).sorted(by: >))
    }

    @Test("a prorated refund and a commitment plan: stored, read back, the ledger refunds the share", arguments: StoreFactory.all)
    func proratedRefundAndCommitment(factory: StoreFactory) async throws {
        let store = try await make(factory)
        var bought = PurchaseEvidence.Purchase(transactionId: "1", originalTransactionId: "1", productId: "coins", purchaseDate: t0)
        bought.billingPlanType = "MONTHLY"
        bought.commitment = CommitmentTerms(billingPeriodNumber: 3, totalBillingPeriods: 12, expiresDate: t0.addingTimeInterval(86_400))
        try await grantSigned(store, [bought], tag: "p1", signedAt: t0.addingTimeInterval(1))
        var refunded = bought
        refunded.cancellationDate = t0.addingTimeInterval(5)
        refunded.revocationType = "REFUND_PRORATED"
        refunded.revocationPercentage = 25_000
        try await grantSigned(store, [refunded], tag: "p2", signedAt: t0.addingTimeInterval(2))
        let stored = try #require(try await store.transactions(appId: "app", appUserId: "alice").first)
        #expect(stored.billingPlanType == "MONTHLY" && stored.commitment == bought.commitment)
        #expect(stored.revocationType == "REFUND_PRORATED" && stored.revocationPercentage == 25_000 && stored.cancellationDate != nil)
        // Reversed: the refund fields go, and the reversal credits back what was refunded.
        try await grantSigned(store, [bought], tag: "p3", reverses: true, signedAt: t0.addingTimeInterval(3))
        let reinstated = try #require(try await store.transactions(appId: "app", appUserId: "alice").first)
        #expect(reinstated.cancellationDate == nil && reinstated.revocationType == nil && reinstated.revocationPercentage == nil)
        let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
        #expect(ledger.map(\.event) == [.purchase, .refund, .refundReversed])
        #expect(ledger.map(\.priceMicros) == [1_000_000, -250_000, 250_000])
    }

    @Test(
        "waiting jobs released when Apple returns: due at once, in arrival order; other kinds and running jobs untouched", arguments: StoreFactory.all
    )
    func releaseWaiting(factory: StoreFactory) async throws {
        let store = try await factory.make()
        var jobIds: [String] = []
        for i in 0..<3 {
            let submitted = try await SubmitEvidence(store: store)(submission(user: "u\(i)", receipt: "w\(i)"), now: t0.addingTimeInterval(Double(i)))
            jobIds.append(submitted.verification.jobId)
        }
        let now = t0.addingTimeInterval(10)
        let leased = try await lease(store, at: now)
        #expect(Set(leased.map(\.jobId)) == Set(jobIds))
        // Two wait far ahead (Apple down); one is still running.
        for lease in leased where lease.jobId != jobIds[1] {
            #expect(try await store.retryJob(lease, at: now.addingTimeInterval(3_600), reason: "apple_down", now: now))
        }
        #expect(try await lease(store, at: now.addingTimeInterval(1)).isEmpty)
        #expect(try await store.releaseWaitingJobs(kinds: ["other_kind"], now: now.addingTimeInterval(1)) == 0)
        #expect(try await store.releaseWaitingJobs(kinds: ["verify_receipt"], now: now.addingTimeInterval(1)) == 2)
        #expect(try await store.releaseWaitingJobs(kinds: ["verify_receipt"], now: now.addingTimeInterval(1)) == 0)
        let again = try await lease(store, at: now.addingTimeInterval(1), limit: 1)
        #expect(again.map(\.jobId) == [jobIds[0]], "the oldest first")
        #expect(try await lease(store, at: now.addingTimeInterval(1)).map(\.jobId) == [jobIds[2]])
    }

    @Test(
        "the store announces queued work after the commit that queued it, and only then: no caller has to wake the runners",
        arguments: StoreFactory.all)
    func queuedWorkAnnounced(factory: StoreFactory) async throws {
        let store = try await factory.make()
        _ = store.queued.takePending()
        let first = try await SubmitEvidence(store: store)(submission(), now: t0)
        #expect(first.created && store.queued.takePending(), "a new verification's job")
        let again = try await SubmitEvidence(store: store)(submission(), now: t0.addingTimeInterval(1))
        #expect(!again.created && !store.queued.takePending(), "the same post queues nothing")
        _ = try await store.verificationCounts()
        #expect(!store.queued.takePending(), "a read queues nothing")
        let held = try #require(try await lease(store, at: t0).first)
        #expect(!store.queued.takePending(), "a lease queues nothing")
        #expect(try await store.retryJob(held, at: t0.addingTimeInterval(3_600), reason: "apple_down", now: t0))
        _ = store.queued.takePending()
        #expect(try await store.releaseWaitingJobs(kinds: ["other_kind"], now: t0) == 0)
        #expect(!store.queued.takePending(), "nothing released, nothing announced")
        #expect(try await store.releaseWaitingJobs(kinds: ["verify_receipt"], now: t0) == 1)
        #expect(store.queued.takePending(), "a released wait is due now")
    }

    @Test("released at a rate: the n-th oldest waiting job is due n ÷ rate seconds later", arguments: StoreFactory.all)
    func releaseAtRate(factory: StoreFactory) async throws {
        let store = try await factory.make()
        var jobIds: [String] = []
        for i in 0..<4 {
            let submitted = try await SubmitEvidence(store: store)(
                submission(user: "r\(i)", receipt: "rate\(i)"), now: t0.addingTimeInterval(Double(i)))
            jobIds.append(submitted.verification.jobId)
        }
        let now = t0.addingTimeInterval(10)
        for lease in try await lease(store, at: now) {
            #expect(try await store.retryJob(lease, at: now.addingTimeInterval(3_600), reason: "apple_down", now: now))
        }
        // 2 a second: due at now, now + 0.5 s, now + 1 s, now + 1.5 s, oldest first.
        #expect(try await store.releaseWaitingJobs(kinds: ["verify_receipt"], now: now, perSecond: 2) == 4)
        #expect(try await lease(store, at: now).map(\.jobId) == [jobIds[0]])
        #expect(try await lease(store, at: now.addingTimeInterval(0.499)).isEmpty)
        #expect(try await lease(store, at: now.addingTimeInterval(0.5)).map(\.jobId) == [jobIds[1]])
        #expect(try await lease(store, at: now.addingTimeInterval(1.6)).map(\.jobId) == [jobIds[2], jobIds[3]])
    }

    @Test("Apple's shared health moves once per change, and only the move records its events", arguments: StoreFactory.all)
    func sharedAppleHealth(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let endpoint = "verify_receipt_production"
        #expect(try await store.sharedAppleHealth(endpoint: endpoint) == nil)
        let events = { @Sendable (state: AppleHealth.State, at: Date) in
            { @Sendable (previous: SharedAppleHealth?) -> EventBatch? in
                EventBatch(
                    events: AppleHealthEvents.events(
                        to: state, endpoint: endpoint, environment: "production", at: at, downSince: previous?.since, appIds: ["app"]))
            }
        }
        // No row counts as healthy: nothing to move.
        #expect(try await store.moveSharedAppleHealth(endpoint: endpoint, to: .healthy, at: t0, events: events(.healthy, t0)) == false)
        // Two processes see Apple go down: the first moves the state and announces it.
        #expect(
            try await store.moveSharedAppleHealth(
                endpoint: endpoint, to: .down, at: t0.addingTimeInterval(1), events: events(.down, t0.addingTimeInterval(1))))
        #expect(
            try await store.moveSharedAppleHealth(
                endpoint: endpoint, to: .down, at: t0.addingTimeInterval(2), events: events(.down, t0.addingTimeInterval(2))) == false)
        #expect(try await store.sharedAppleHealth(endpoint: endpoint) == SharedAppleHealth(state: .down, since: t0.addingTimeInterval(1)))
        #expect(
            try await store.moveSharedAppleHealth(
                endpoint: endpoint, to: .healthy, at: t0.addingTimeInterval(60), events: events(.healthy, t0.addingTimeInterval(60))))
        #expect(
            try await store.moveSharedAppleHealth(
                endpoint: endpoint, to: .healthy, at: t0.addingTimeInterval(61), events: events(.healthy, t0.addingTimeInterval(61))) == false)
        #expect(try await store.sharedAppleHealth(endpoint: endpoint) == SharedAppleHealth(state: .healthy, since: t0.addingTimeInterval(60)))
        #expect(try await store.sharedAppleHealth(endpoint: "verify_receipt_sandbox") == nil)

        let recorded = try await store.events(appId: "app", after: 0, types: [], limit: 10).map(\.event)
        #expect(recorded.map(\.type) == [.appleDown, .appleRecovered])
        #expect(recorded.allSatisfy { $0.appUserId == AppleHealthEvents.appUserId && $0.details?.appleEndpoint == endpoint })
        #expect(recorded.map(\.sequence) == [1, 2])
        #expect(recorded.last?.details?.downSince == t0.addingTimeInterval(1) && recorded.last?.occurredAt == t0.addingTimeInterval(60))

        // Each move is kept, newest first: the outage history. A second outage is under way.
        #expect(
            try await store.moveSharedAppleHealth(
                endpoint: "server_api_production", to: .down, at: t0.addingTimeInterval(90), events: { _ in nil }))
        #expect(
            try await store.appleHealthHistory(since: t0, limit: 10) == [
                AppleHealthMove(endpoint: "server_api_production", state: .down, at: t0.addingTimeInterval(90)),
                AppleHealthMove(endpoint: endpoint, state: .healthy, at: t0.addingTimeInterval(60)),
                AppleHealthMove(endpoint: endpoint, state: .down, at: t0.addingTimeInterval(1)),
            ])
        #expect(try await store.appleHealthHistory(since: t0.addingTimeInterval(2), limit: 10).count == 2)
        #expect(try await store.appleHealthHistory(since: t0, limit: 1).map(\.at) == [t0.addingTimeInterval(90)])
        let outages = try await ReadOperations(store: store).outages(since: t0)
        #expect(
            outages == [
                ReadOperations.Outage(endpoint: "server_api_production", began: t0.addingTimeInterval(90), ended: nil),
                ReadOperations.Outage(endpoint: endpoint, began: t0.addingTimeInterval(1), ended: t0.addingTimeInterval(60)),
            ])
    }

    @Test(
        "estimated ledger rows are booked again at the price their signed evidence says, refunds at their share; receipts stay estimated; the figures follow",
        arguments: StoreFactory.all)
    func estimatedLedgerRecomputed(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 5_990_000, currency: "USD"),
            now: t0)
        // Granted as before M0015: the grant did not keep Apple's price, so the list price was booked.
        let coins = PurchaseEvidence.Purchase(transactionId: "r1", originalTransactionId: "r1", productId: "coins", purchaseDate: t0)
        try await grantSigned(store, [coins], tag: "jws-1")
        let receipt = PurchaseEvidence.Purchase(transactionId: "r2", originalTransactionId: "r2", productId: "coins", purchaseDate: t0)
        try await grantSigned(store, [receipt], tag: "receipt-2")
        var monthly = PurchaseEvidence.Purchase(transactionId: "r3", originalTransactionId: "r3", productId: "monthly", purchaseDate: t0)
        monthly.expiresDate = t0.addingTimeInterval(30 * 86_400)
        monthly.cancellationDate = t0.addingTimeInterval(86_400)
        monthly.revocationPercentage = 50_000
        try await grantSigned(store, [monthly], user: "bob", tag: "jws-3")
        let sandbox = LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture)
        #expect(try await store.ledger(sandbox).allSatisfy(\.estimated))
        _ = try await store.revenueDays(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture)

        // What the signed copies say (the reader stands for the gate's reread of the stored JWS).
        var charged = coins
        charged.price = ChargedPrice(milliunits: 790, currency: "GBP")
        charged.storefront = "GBR"
        var discounted = monthly
        discounted.price = ChargedPrice(milliunits: 2_990, currency: "USD")
        discounted.storefront = "FRA"
        discounted.offer = PurchaseOffer(type: 1, identifier: nil, discountType: "PAY_AS_YOU_GO", period: "P1M")
        let signed: [String: [PurchaseEvidence.Purchase]] = ["jws-1": [charged], "jws-3": [discounted]]
        let recompute = RecomputeEstimatedLedger(store: store) { evidence in signed[evidence] }
        var reported: [RecomputeEstimatedLedger.Progress] = []
        let done = try await recompute(appId: "app", commission: .standard, batch: 2) { reported.append($0) }
        #expect(done.read == 4 && done.recomputed == 3 && done.left == 1 && reported.count == 2 && reported.last == done)

        let rows = Dictionary(
            try await store.ledger(sandbox).map { ("\($0.transactionId)-\($0.event.rawValue)", $0) }, uniquingKeysWith: { a, _ in a })
        let r1 = try #require(rows["r1-purchase"])
        #expect(r1.priceMicros == 790_000 && r1.currency == "GBP" && !r1.estimated && r1.storefront == "GBR")
        #expect(r1.commissionRate == CommissionRule.standardRate && r1.proceedsMicros == 553_000 && r1.appUserId == "alice")
        let r2 = try #require(rows["r2-purchase"])
        #expect(r2.estimated && r2.priceMicros == 1_000_000 && r2.currency == "EUR")
        let r3 = try #require(rows["r3-purchase"])
        #expect(r3.priceMicros == 2_990_000 && r3.currency == "USD" && !r3.estimated && r3.offer?.discountType == "PAY_AS_YOU_GO")
        let refund = try #require(rows["r3-refund"])
        #expect(refund.priceMicros == -1_495_000 && refund.currency == "USD" && !refund.estimated && refund.appUserId == "bob")
        let alice = try await store.transactions(appId: "app", appUserId: "alice")
        #expect(alice.first { $0.transactionId == "r1" }?.price == ChargedPrice(milliunits: 790, currency: "GBP"))
        #expect(alice.first { $0.transactionId == "r2" }?.price == nil)
        #expect(try await store.transactions(appId: "app", appUserId: "bob").first?.storefront == "FRA")
        // The kept revenue was built again from the rows as booked now.
        let ledger = try await store.ledger(sandbox)
        #expect(
            try await store.revenueDays(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture) == RevenueDay.grouping(ledger))

        // Again: nothing more to do; the receipt's row is read and stays.
        let again = try await recompute(appId: "app", commission: .standard)
        #expect(again.read == 1 && again.recomputed == 0 && again.left == 1)
        #expect(try await store.ledger(sandbox) == ledger)
        // Another app's rows are not touched.
        #expect(try await recompute(appId: "other", commission: .standard).read == 0)
    }

    @Test("each pull of Apple's notification history is kept 30 days, newest first, with what it found or why it failed", arguments: StoreFactory.all)
    func gapFillRuns(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let history = GapFillHistory(store: store)
        let old = GapFillRun(
            cause: "scheduled", appId: "app", startedAt: t0, from: t0 - 3_600, to: t0, examined: 3, recovered: 2, duplicates: 1, pages: 1)
        let failed = GapFillRun(cause: "operator", appId: "other", startedAt: t0 + 60, from: t0, to: t0 + 60, error: "apple_unavailable")
        try await history.record(old)
        try await history.record(failed)
        #expect(try await history.runs(since: .distantPast, limit: 10) == [failed, old])
        #expect(try await history.runs(since: t0 + 1, limit: 10) == [failed])
        #expect(try await history.runs(since: .distantPast, limit: 1) == [failed])
        // A pull 30 days and a minute later: the first is no longer kept.
        let later = GapFillRun(cause: "scheduled", appId: "app", startedAt: t0 + GapFillRun.keptSeconds + 30, from: t0, to: t0 + 60)
        try await history.record(later)
        #expect(try await history.runs(since: .distantPast, limit: 10) == [later, failed])
    }

    @Test("calls to Apple tallied by processes add up per endpoint, outcome and minute; tallies older than 30 days go", arguments: StoreFactory.all)
    func appleCallTallies(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let history = AppleCallHistory(store: store)
        let minute = AppleCallTally.minute(of: t0)
        func tally(_ endpoint: String, _ outcome: String, _ period: Date, _ latencies: [Int64]) -> AppleCallTally {
            var tally = AppleCallTally(endpoint: endpoint, outcome: outcome, period: period)
            for latency in latencies { tally.add(milliseconds: latency) }
            return tally
        }
        // Two processes flush the same minute: added column to column.
        try await history.add([tally("verify_receipt_production", "0", minute, [20, 400]), tally("ocsp", "http_200", minute, [60])], now: t0)
        try await history.add([tally("verify_receipt_production", "0", minute, [45_000]), tally("ocsp", "timeout", minute + 60, [5_000])], now: t0)
        var expected = tally("verify_receipt_production", "0", minute, [20, 400, 45_000])
        let stored = try await store.appleCalls(since: .distantPast)
        #expect(stored.count == 3)
        #expect(stored.first { $0.endpoint == "verify_receipt_production" } == expected)
        #expect(stored.first { $0.outcome == "timeout" } == tally("ocsp", "timeout", minute + 60, [5_000]))
        #expect(try await store.appleCalls(since: minute + 60).map(\.outcome) == ["timeout"])
        // Read by hour: one row per endpoint, outcomes most calls first.
        let hours = try await history.hours(since: t0, unflushed: { [tally("ocsp", "http_200", minute, [90])] })
        #expect(hours.map(\.endpoint) == ["ocsp", "verify_receipt_production"])
        #expect(hours[0].outcomes.map { "\($0.outcome) \($0.count)" } == ["http_200 2", "timeout 1"] && hours[0].all.count == 3)
        expected.period = AppleCallTally.hour(of: t0)
        #expect(hours[1].outcomes == [expected] && hours[1].all.percentile(0.5) == .atMost(500))
        // A flush 30 days and two minutes later: the old minutes are no longer kept.
        let later = t0 + AppleCallTally.keptSeconds + 120
        try await history.add([tally("ocsp", "http_200", AppleCallTally.minute(of: later), [10])], now: later)
        #expect(try await store.appleCalls(since: .distantPast).map(\.period) == [AppleCallTally.minute(of: later)])
    }

    @Test("a renewal info signed before the stored one does not undo it, whichever arrives last", arguments: StoreFactory.all)
    func renewalOrderStored(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 5_990_000, currency: "USD"),
            now: t0)
        var purchase = PurchaseEvidence.Purchase(transactionId: "s1", originalTransactionId: "s1", productId: "monthly", purchaseDate: t0)
        purchase.expiresDate = t0.addingTimeInterval(30 * 86_400)
        for (tag, autoRenew, signedAt) in [("turned-off", false, t0 + 10), ("subscribed", true, t0 + 1)] {
            var renewal = PurchaseEvidence.Renewal(
                autoRenewEnabled: autoRenew, autoRenewProductId: "monthly", inBillingRetry: false, gracePeriodExpiresDate: nil,
                expirationIntent: nil, signedAt: signedAt, winBackOfferIds: autoRenew ? nil : ["back50", "back25"])
            renewal.priceIncreaseStatus = autoRenew ? nil : 0
            let submitted = try await SubmitEvidence(store: store)(submission(receipt: tag), now: t0)
            let leased = try #require(try await lease(store, at: t0).first { $0.jobId == submitted.verification.jobId })
            let evidence = PurchaseEvidence(
                source: .notification, bundleId: "com.example", environment: "sandbox", purchases: [purchase],
                renewals: ["s1": renewal])
            _ = try await VerificationOutcomes(store: store).completeVerified(
                leased, verificationId: submitted.verification.id, evidence: evidence,
                report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0)
        }
        let facts = try #require(try await store.subscriptions(appId: "app", appUserId: "alice").first)
        #expect(facts.autoRenewEnabled == false && facts.renewalSignedAt == t0 + 10)
        #expect(facts.winBackOfferIds == ["back50", "back25"], "the newer renewal info's win-back offers, kept in Apple's order")
        #expect(facts.priceIncreaseStatus == 0, "and its price increase, waiting for consent")
    }

    @Test("a console sign-out is seen by every process until the session would have expired", arguments: StoreFactory.all)
    func consoleSignOuts(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let sessions = ManageConsoleSessions(store: store)
        #expect(try await sessions.isSignedOut(nonce: "a") == false)
        try await sessions.signOut(nonce: "a", expires: t0.addingTimeInterval(60), now: t0)
        // Twice (two tabs): one row, no error.
        try await sessions.signOut(nonce: "a", expires: t0.addingTimeInterval(60), now: t0.addingTimeInterval(1))
        #expect(try await sessions.isSignedOut(nonce: "a"))
        #expect(try await sessions.isSignedOut(nonce: "b") == false)
        // A later sign-out deletes the rows of sessions expired by then: their cookies are refused anyway.
        try await sessions.signOut(nonce: "b", expires: t0.addingTimeInterval(600), now: t0.addingTimeInterval(60))
        #expect(try await sessions.isSignedOut(nonce: "a") == false)
        #expect(try await sessions.isSignedOut(nonce: "b"))
    }

    @Test("configuration holds are released only when the configuration changes", arguments: StoreFactory.all)
    func configurationHolds(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submitted = try await SubmitEvidence(store: store)(submission(), now: t0)
        let held = try #require(try await lease(store, at: t0).first)
        let report = AttemptReport(statuses: [21004], environment: "production", reason: "shared_secret_mismatch")
        #expect(
            try await VerificationOutcomes(store: store).holdForConfiguration(
                held, verificationId: submitted.verification.id, report: report, configurationFingerprint: "old", now: t0))
        #expect(try await lease(store, at: t0.addingTimeInterval(1000)).isEmpty)
        #expect(try await ReleaseConfigurationHolds(store: store)(appId: "app", currentFingerprint: "old", now: t0) == 0)
        #expect(try await ReleaseConfigurationHolds(store: store)(appId: "app", currentFingerprint: "new", now: t0) == 1)
        #expect(try await store.verification(id: submitted.verification.id)?.state == .pending)
        #expect(try await lease(store, at: t0.addingTimeInterval(1)).count == 1)
    }

    @Test("catalog: seeds keep admin edits, upserts replace, deletes report absence", arguments: StoreFactory.all)
    func catalog(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let coins = Product(productId: "coins", type: .consumable, creditAmount: 10)
        try await store.seedProducts(appId: "app", products: [coins], now: t0)
        var edited = coins
        edited.creditAmount = 50
        try await store.upsertProduct(appId: "app", product: edited, now: t0)
        try await store.seedProducts(appId: "app", products: [coins], now: t0)
        #expect(try await store.product(appId: "app", productId: "coins")?.creditAmount == 50)
        #expect(try await store.deleteProduct(appId: "app", productId: "coins"))
        #expect(try await store.deleteProduct(appId: "app", productId: "coins") == false)
        #expect(try await store.products(appId: "app").isEmpty)
    }

    @Test(
        "entitlements: definitions seed, edit and delete like the catalog; a grant's event carries them from the stored definitions; a transaction's offer round-trips",
        arguments: StoreFactory.all)
    func entitlements(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.seedProducts(appId: "app", products: [Product(productId: "removeads", type: .nonConsumable)], now: t0)
        let noAds = EntitlementDefinition(id: "no_ads", products: ["removeads"])
        try await store.seedEntitlements(appId: "app", definitions: [noAds, EntitlementDefinition(id: "vip", products: ["x"])], now: t0)
        let vip = EntitlementDefinition(id: "vip", products: ["removeads", "y"])
        try await store.upsertEntitlement(appId: "app", definition: vip, audit: audit("entitlement_saved", "vip", saved: vip), now: t0)
        // A second seed (the next start) keeps the edit.
        try await store.seedEntitlements(appId: "app", definitions: [EntitlementDefinition(id: "vip", products: ["x"])], now: t0)
        #expect(
            try await store.entitlementDefinitions(appId: "app")
                == [noAds, EntitlementDefinition(id: "vip", products: ["removeads", "y"])])
        #expect(try await store.entitlementDefinitions(appId: "other").isEmpty)

        var bought = PurchaseEvidence.Purchase(transactionId: "1", originalTransactionId: "1", productId: "removeads", purchaseDate: t0)
        bought.offer = PurchaseOffer(type: 3, identifier: "SPRING", discountType: "PAY_UP_FRONT", period: "P1M")
        try await grantSigned(store, [bought], tag: "e1")
        let stored = try #require(try await store.transactions(appId: "app", appUserId: "alice").first)
        #expect(stored.offer == bought.offer)
        let events = try await store.events(appId: "app", after: 0, types: [], limit: 10)
        let view = try #require(events.last?.event.entitlements)
        #expect(Set(view.entitlements.keys) == ["no_ads", "vip"] && view.entitlements["vip"]?.transactionId == "1")
        // The purchase's event, then one granting each entitlement, in the same transaction.
        #expect(events.map(\.event.type) == [.nonConsumablePurchase, .entitlementGranted, .entitlementGranted])
        #expect(events.map { $0.event.details?.entitlementId } == [nil, "no_ads", "vip"])
        #expect(events.map(\.event.sequence) == [1, 2, 3])
        // The same evidence again changes nothing; a refund revokes both.
        try await grantSigned(store, [bought], tag: "e2")
        #expect(try await store.events(appId: "app", after: 0, types: [], limit: 10).count == 3)
        var refunded = bought
        refunded.cancellationDate = t0.addingTimeInterval(60)
        try await grantSigned(store, [refunded], tag: "e3", signedAt: t0.addingTimeInterval(61))
        let after = try await store.events(appId: "app", after: 0, types: [], limit: 10).map(\.event)
        #expect(after.dropFirst(3).map(\.type) == [.refund, .entitlementRevoked, .entitlementRevoked], "\(after.map(\.type))")

        let deleted = audit("entitlement_deleted", "vip", saved: nil as EntitlementDefinition?)
        #expect(try await store.deleteEntitlement(appId: "app", entitlementId: "vip", audit: deleted, now: t0))
        #expect(
            try await store.deleteEntitlement(
                appId: "app", entitlementId: "vip", audit: audit("entitlement_deleted", "vip", saved: nil as EntitlementDefinition?), now: t0)
                == false)
        #expect(try await store.entitlementDefinitions(appId: "app") == [noAds])
        // Each change that happened is audited with what was saved; the delete that found nothing is not.
        let log = try await store.auditEntries(appId: "app", after: 0, limit: 10).map(\.entry)
        #expect(log.map(\.action) == ["entitlement_saved", "entitlement_deleted"] && log.last == deleted)
        #expect(log.first?.change == .object(["id": .string("vip"), "products": .array([.string("removeads"), .string("y")])]))
    }

    func audit(_ action: String, _ subject: String, user: String? = nil, saved: (some Encodable)?) -> AuditEntry {
        AuditEntry.change(
            appId: "app", at: t0, actor: "ops@example.com", action: action, reason: "test", subject: subject, appUserId: user, saved: saved)
    }

    @Test(
        "attributes: merged key by key in one transaction, so concurrent changes keep each other's keys; cleared fields go",
        arguments: StoreFactory.all)
    func attributes(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let manage = ManageCustomers(store: store)
        #expect(try await store.attributes(appId: "app", appUserId: "alice") == nil)
        let first = try await manage.update(
            appId: "app", appUserId: "alice", change: AttributeChange(email: .set("a@example.com"), custom: ["plan": "gold"]), now: t0)
        #expect(try first.get() == SubscriberAttributes(email: "a@example.com", custom: ["plan": "gold"]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<20 {
                group.addTask {
                    _ = try await manage.update(appId: "app", appUserId: "alice", change: AttributeChange(custom: ["k\(index)": "\(index)"]), now: t0)
                }
            }
            try await group.waitForAll()
        }
        let stored = try #require(try await store.attributes(appId: "app", appUserId: "alice"))
        #expect(stored.custom.count == 21 && stored.custom["k7"] == "7" && stored.email == "a@example.com")
        // Refused: nothing written; a change that empties everything removes the row.
        let refused = try await manage.update(appId: "app", appUserId: "alice", change: AttributeChange(email: .set("not an address")), now: t0)
        #expect((try? refused.get()) == nil)
        #expect(try await store.attributes(appId: "app", appUserId: "alice") == stored)
        let over = try await manage.update(
            appId: "app", appUserId: "alice", change: AttributeChange(custom: Dictionary(uniqueKeysWithValues: (0..<40).map { ("x\($0)", "v") })),
            now: t0)
        #expect((try? over.get()) == nil, "21 + 40 keys is over the limit of 50")
        var clearAll = AttributeChange(email: .clear)
        for key in stored.custom.keys { clearAll.custom[key] = .some(nil) }
        #expect(try await manage.update(appId: "app", appUserId: "alice", change: clearAll, now: t0).get().isEmpty)
        #expect(try await store.attributes(appId: "app", appUserId: "alice") == nil)
        #expect(try await store.tablesMentioning("a@example.com").isEmpty)
    }

    @Test(
        "delete a customer: no table holds their id or attributes afterwards; money rows kept under a tombstone, ledger unchanged; another user untouched",
        arguments: StoreFactory.all)
    func deleteCustomer(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let user = "carol.deleted-me"
        try await store.seedProducts(
            appId: "app",
            products: [Product(productId: "removeads", type: .nonConsumable), Product(productId: "coins", type: .consumable, creditAmount: 5)],
            now: t0)
        try await store.seedEntitlements(appId: "app", definitions: [EntitlementDefinition(id: "no_ads", products: ["removeads"])], now: t0)
        let manage = ManageCustomers(store: store)
        _ = try await manage.update(
            appId: "app", appUserId: user,
            change: AttributeChange(email: .set("carol@example.org"), displayName: .set("Carol Q"), custom: ["team": "vermilion"]),
            now: t0)
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "c1", originalTransactionId: "c1", productId: "removeads", purchaseDate: t0)],
            user: user,
            tag: "c1")
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "b1", originalTransactionId: "b1", productId: "coins", purchaseDate: t0)], user: "bob",
            tag: "b1")
        _ = try await ManagePromotionalGrants(store: store).grant(
            .init(
                appId: "app", appUserId: user, entitlementId: "no_ads", duration: "P7D", actor: AuditActor(name: "ops", reason: ""),
                reason: "sorry, Carol Q", grantId: nil),
            now: t0)
        try await store.seedOfferings(
            appId: "app", offerings: [Offering(id: "main", packages: [OfferingPackage(id: "$lifetime", productId: "removeads")])], targeting: nil,
            now: t0)
        #expect(
            try await ManageOfferings(store: store).setOverride(
                appId: "app", appUserId: user, offeringId: "main", actor: AuditActor(name: "ops", reason: ""), now: t0) == .set)
        let events = try await store.events(appId: "app", after: 0, types: [], limit: 50).map(\.event)
        #expect(events.contains { $0.appUserId == user && $0.entitlements?.attributes?.email == "carol@example.org" }, "events carry the attributes")
        _ = try await store.recordAppTransaction(
            appId: "app", appUserId: user,
            CustomerAppTransaction(
                appTransactionId: "7000000000000001", environment: "Sandbox", originalAppVersion: "1.0", originalPurchaseDate: t0,
                originalPlatform: "iOS", signedDate: t0, receivedAt: t0))
        let held = try await store.tablesMentioning(user)
        for table in [
            "transactions", "ledger", "events", "verifications", "subscriber_attributes", "offering_overrides", "promotional_grants", "audit_log",
            "app_transactions",
        ] {
            #expect(held[table] != nil, "\(table) held the id before: \(held)")
        }
        // The customer's audit entries, newest first, and no one else's.
        let own = try await store.auditEntries(appId: "app", appUserId: user, limit: 10).map(\.entry.action)
        #expect(own == ["offering_override_set", "promotional_grant"], "\(own)")
        #expect(try await store.auditEntries(appId: "app", appUserId: user, limit: 1).map(\.entry.action) == ["offering_override_set"])
        #expect(try await store.auditEntries(appId: "app", appUserId: "bob", limit: 10).isEmpty)
        #expect(try await store.auditEntries(appId: "other", appUserId: user, limit: 10).isEmpty)
        // Operators' words that name the customer: a suspension's reason, its lifting's.
        #expect(
            try await manage.suspend(
                appId: "app", appUserId: user, reason: "chargeback by carol@example.org", actor: AuditActor(name: "ops", reason: ""), cause: nil,
                now: t0))
        let range = LedgerQuery(appId: "app", environment: "sandbox", from: t0.addingTimeInterval(-86_400), to: t0.addingTimeInterval(86_400))
        let ledgerBefore = try await store.ledger(range)
        let bobBefore = try await store.transactions(appId: "app", appUserId: "bob")
        let eventsBefore = try await store.events(appId: "app", after: 0, types: [], limit: 50).map(\.event)

        let deletion = try #require(
            try await manage.delete(
                appId: "app", appUserId: user,
                actor: AuditActor(name: "dpo@example.com", reason: "erasure request of CAROL@example.org (Carol Q), ticket 77"), now: t0))
        #expect(CustomerErasure.isTombstone(deletion.tombstone) && deletion.rows["transactions"] == 1 && deletion.rows["subscriber_attributes"] == 1)
        #expect(try await store.appTransaction(appId: "app", appUserId: user) == nil && deletion.rows["app_transactions"] == 1)
        for needle in [user, "carol@example.org", "Carol Q", "vermilion", "chargeback by", "sorry,"] {
            let left = try await store.tablesMentioning(needle)
            #expect(left.isEmpty, "\(needle) still in \(left)")
        }
        // Money kept: the same rows, the same amounts, under the tombstone.
        let ledgerAfter = try await store.ledger(range)
        #expect(ledgerAfter.count == ledgerBefore.count && ledgerAfter.map(\.transactionId) == ledgerBefore.map(\.transactionId))
        #expect(ledgerAfter.map(\.priceMicros) == ledgerBefore.map(\.priceMicros))
        #expect(ledgerAfter.filter { $0.transactionId == "c1" }.allSatisfy { $0.appUserId == deletion.tombstone })
        #expect(try await store.transactions(appId: "app", appUserId: deletion.tombstone).map(\.transactionId) == ["c1"])
        #expect(try await store.transactions(appId: "app", appUserId: "bob") == bobBefore)
        #expect(try await store.owner(appId: "app", originalTransactionId: "c1") == deletion.tombstone)
        let erasedEvents = try await store.events(appId: "app", after: 0, types: [], limit: 50).map(\.event)
        #expect(erasedEvents.count == eventsBefore.count && erasedEvents.allSatisfy { $0.entitlements?.attributes == nil })
        #expect(try await store.suspension(appId: "app", appUserId: deletion.tombstone)?.reason == CustomerErasure.erasedText)
        // The deletion is audited under the tombstone; a second one finds nothing.
        let log = try await store.auditEntries(appId: "app", after: 0, limit: 50).map(\.entry)
        #expect(log.last?.action == "customer_deleted" && log.last?.appUserId == deletion.tombstone && log.last?.actor == "dpo@example.com")
        #expect(log.last?.reason == "erasure request of [deleted] ([deleted]), ticket 77", "\(log.last?.reason ?? "")")
        #expect(try await store.auditEntries(appId: "app", appUserId: user, limit: 10).isEmpty)
        #expect(
            try await store.auditEntries(appId: "app", appUserId: deletion.tombstone, limit: 10).map(\.entry.action)
                == ["customer_deleted", "access_suspended", "offering_override_set", "promotional_grant"])
        #expect(try await manage.delete(appId: "app", appUserId: user, actor: AuditActor(name: "dpo", reason: ""), now: t0) == nil)
    }

    @Test(
        "aliases: a link under transfer moves the anonymous id's purchases, money and suspension (the user's own attributes win), once; keep links only an empty id",
        arguments: StoreFactory.all)
    func aliases(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.seedProducts(appId: "app", products: [Product(productId: "removeads", type: .nonConsumable)], now: t0)
        let anon = AnonymousId.new()
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "a1", originalTransactionId: "a1", productId: "removeads", purchaseDate: t0)],
            user: anon,
            tag: "a1")
        let customers = ManageCustomers(store: store)
        _ = try await customers.update(appId: "app", appUserId: anon, change: AttributeChange(displayName: .set("Anon")), now: t0)
        _ = try await customers.update(appId: "app", appUserId: "alice", change: AttributeChange(displayName: .set("Alice")), now: t0)
        #expect(
            try await customers.suspend(
                appId: "app", appUserId: anon, reason: "consent_rescinded", actor: AuditActor(name: "ops", reason: ""), cause: nil, now: t0))
        let identity = ManageIdentity(store: store)
        let ledgerBefore = try await store.ledger(
            LedgerQuery(appId: "app", environment: "sandbox", from: t0.addingTimeInterval(-60), to: t0.addingTimeInterval(60)))

        guard
            case .linked(.linked(let moved)) = try await identity.logIn(
                appId: "app", anonymousId: anon, appUserId: "alice", policy: .transfer, now: t0)
        else { Issue.record("not linked"); return }
        #expect(moved.map(\.transactionId) == ["a1"])
        #expect(try await identity.resolve(appId: "app", appUserId: anon) == "alice")
        #expect(try await identity.resolve(appId: "app", appUserId: "bob") == "bob")
        #expect(try await store.aliases(appId: "app", appUserId: "alice") == [anon])
        #expect(try await store.transactions(appId: "app", appUserId: "alice").map(\.transactionId) == ["a1"])
        #expect(try await store.transactions(appId: "app", appUserId: anon).isEmpty)
        #expect(try await store.owner(appId: "app", originalTransactionId: "a1") == "alice")
        let ledgerAfter = try await store.ledger(
            LedgerQuery(appId: "app", environment: "sandbox", from: t0.addingTimeInterval(-60), to: t0.addingTimeInterval(60)))
        #expect(ledgerAfter.map(\.appUserId) == ["alice"] && ledgerAfter.map(\.priceMicros) == ledgerBefore.map(\.priceMicros))
        #expect(try await store.attributes(appId: "app", appUserId: "alice")?.displayName == "Alice", "the user's own attributes win")
        #expect(
            try await store.suspension(appId: "app", appUserId: "alice")?.reason == "consent_rescinded", "a suspension is not escaped by signing in")
        let transfers = try await store.events(appId: "app", after: 0, types: [.transfer], limit: 10).map(\.event)
        #expect(transfers.map(\.appUserId) == ["alice"] && transfers.first?.details?.fromAppUserId == anon)
        #expect(try await identity.logIn(appId: "app", anonymousId: anon, appUserId: "alice", policy: .transfer, now: t0) == .linked(.alreadyLinked))
        #expect(try await identity.logIn(appId: "app", anonymousId: anon, appUserId: "bob", policy: .transfer, now: t0) == .linked(.linkedElsewhere))
        #expect(try await store.events(appId: "app", after: 0, types: [.transfer], limit: 10).count == 1)
        guard case .invalid = try await identity.logIn(appId: "app", anonymousId: "bob", appUserId: "alice", policy: .transfer, now: t0) else {
            Issue.record("a known id was linked as anonymous")
            return
        }

        // A bound on the anonymous ids one user may link: the next is refused, nothing linked;
        // one already linked is still answered.
        let bounded = ManageIdentity(store: store, maximumAliases: 3)
        for _ in 0..<2 {
            guard
                case .linked(.linked) = try await bounded.logIn(
                    appId: "app", anonymousId: AnonymousId.new(), appUserId: "alice", policy: .transfer, now: t0)
            else { Issue.record("not linked under the bound"); return }
        }
        let fourth = AnonymousId.new()
        #expect(try await bounded.logIn(appId: "app", anonymousId: fourth, appUserId: "alice", policy: .transfer, now: t0) == .tooManyAliases(3))
        #expect(try await store.aliases(appId: "app", appUserId: "alice").count == 3)
        #expect(try await identity.resolve(appId: "app", appUserId: fourth) == fourth, "not linked")
        #expect(try await bounded.logIn(appId: "app", anonymousId: anon, appUserId: "alice", policy: .transfer, now: t0) == .linked(.alreadyLinked))

        // keep: an anonymous id with a purchase stays its own.
        let other = AnonymousId.new()
        try await grantSigned(
            store, [PurchaseEvidence.Purchase(transactionId: "k1", originalTransactionId: "k1", productId: "removeads", purchaseDate: t0)],
            user: other,
            tag: "k1")
        guard
            case .linked(.keptWithAnonymous(let owned)) = try await identity.logIn(
                appId: "app", anonymousId: other, appUserId: "bob", policy: .keep, now: t0)
        else { Issue.record("kept id was linked"); return }
        #expect(owned.map(\.transactionId) == ["k1"])
        #expect(try await store.aliases(appId: "app", appUserId: "bob").isEmpty)
        #expect(try await store.transactions(appId: "app", appUserId: other).map(\.transactionId) == ["k1"])
        // Deleting alice deletes what her alias left behind too.
        let deletion = try #require(try await customers.delete(appId: "app", appUserId: "alice", actor: AuditActor(name: "dpo", reason: ""), now: t0))
        let leftAnon = try await store.tablesMentioning(anon)
        let leftAlice = try await store.tablesMentioning("alice")
        #expect(leftAnon.isEmpty && leftAlice.isEmpty, "\(leftAnon) \(leftAlice) after \(deletion)")
    }

    @Test(
        "experiments: created once per id, stopped once, shipped once (its offering made current), each change audited; an enrollment recorded once (the first wins), the earliest of linked ids read",
        arguments: StoreFactory.all)
    func experiments(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let trial = Experiment(
            id: "trial", arms: [Experiment.Arm(offering: "a", weight: 1), Experiment.Arm(offering: "b", weight: 3)], startsAt: t0,
            endsAt: t0.addingTimeInterval(3_600))
        func audit(_ action: String) -> AuditEntry {
            AuditEntry.change(appId: "app", at: t0, actor: "maria", action: action, reason: "", subject: "trial", saved: nil as Experiment?)
        }
        #expect(try await store.experiments(appId: "app").isEmpty)
        #expect(try await store.createExperiment(appId: "app", experiment: trial, audit: audit("experiment_created"), now: t0))
        var again = trial
        again.arms.reverse()
        #expect(try await !store.createExperiment(appId: "app", experiment: again, audit: audit("experiment_created"), now: t0))
        #expect(try await store.experiments(appId: "app") == [trial], "the first stays, arms as created")
        #expect(try await store.experiments(appId: "other").isEmpty)
        // Another experiment while this one runs: refused by the store itself, whatever the
        // caller checked before (two operators racing); once it stops, accepted.
        var secondOpen = trial
        secondOpen.id = "second"
        #expect(try await !store.createExperiment(appId: "app", experiment: secondOpen, audit: audit("experiment_created"), now: t0))
        let otherAudit = AuditEntry.change(
            appId: "other", at: t0, actor: "maria", action: "experiment_created", reason: "", subject: "second", saved: nil as Experiment?)
        #expect(try await store.createExperiment(appId: "other", experiment: secondOpen, audit: otherAudit, now: t0))
        let later = t0.addingTimeInterval(60)
        #expect(try await store.stopExperiment(appId: "app", experimentId: "trial", audit: audit("experiment_stopped"), now: later))
        #expect(try await !store.stopExperiment(appId: "app", experimentId: "trial", audit: audit("experiment_stopped"), now: later))
        #expect(try await !store.stopExperiment(appId: "app", experimentId: "none", audit: audit("experiment_stopped"), now: later))
        #expect(try await store.experiments(appId: "app").first?.stoppedAt == later)
        // Shipping arm 1 of the stopped experiment: its offering current, the stop kept, once.
        var targeting = try await store.offerings(appId: "app").targeting
        targeting.current = "b"
        let shipAt = later.addingTimeInterval(60)
        #expect(
            try await store.shipExperiment(
                appId: "app", experimentId: "trial", arm: 1, targeting: targeting, audit: audit("experiment_shipped"), now: shipAt))
        #expect(
            try await !store.shipExperiment(
                appId: "app", experimentId: "trial", arm: 0, targeting: OfferingTargeting(current: "a"), audit: audit("experiment_shipped"),
                now: shipAt))
        #expect(
            try await !store.shipExperiment(
                appId: "app", experimentId: "none", arm: 0, targeting: OfferingTargeting(current: "a"), audit: audit("experiment_shipped"),
                now: shipAt))
        let shipped = try await store.experiments(appId: "app").first
        #expect(shipped?.shippedArm == 1 && shipped?.stoppedAt == later, "\(String(describing: shipped))")
        #expect(try await store.offerings(appId: "app").targeting.current == "b")
        let actions = try await store.auditEntries(appId: "app", after: 0, limit: 10).map(\.entry.action)
        #expect(actions == ["experiment_created", "experiment_stopped", "experiment_shipped"], "refusals audit nothing")
        #expect(try await store.createExperiment(appId: "app", experiment: secondOpen, audit: audit("experiment_created"), now: shipAt))
        #expect(try await store.experiments(appId: "app").map(\.id) == ["second", "trial"])

        let first = ExperimentEnrollment(experimentId: "trial", appUserId: "anon", arm: 1, offering: "b", enrolledAt: t0)
        func enroll(_ enrollment: ExperimentEnrollment, eventId: String? = nil) async throws -> ExperimentEnrollment {
            var event = enrollment.event(appId: "app")
            if let eventId { event.id = eventId }
            return try await store.enroll(appId: "app", enrollment, events: EventBatch(events: [event]))
        }
        #expect(try await enroll(first) == first)
        var second = first
        (second.arm, second.offering, second.enrolledAt) = (0, "a", later)
        #expect(try await enroll(second, eventId: "evt_second") == first, "enrolled once: the stored one answers")
        let alice = ExperimentEnrollment(experimentId: "trial", appUserId: "alice", arm: 0, offering: "a", enrolledAt: later)
        #expect(try await enroll(alice) == alice)
        // One experiment_enrolled per enrollment written, in its transaction; the refused one wrote none.
        let enrolled = try await store.events(appId: "app", after: 0, types: [.experimentEnrolled], limit: 10).map(\.event)
        #expect(enrolled.map(\.appUserId) == ["anon", "alice"] && enrolled.map { $0.details?.arm } == [1, 0], "\(enrolled.map(\.id))")
        #expect(try await store.enrollment(appId: "app", experimentId: "trial", appUserIds: ["alice", "anon"]) == first, "the earliest")
        #expect(try await store.enrollment(appId: "app", experimentId: "trial", appUserIds: ["alice"]) == alice)
        #expect(try await store.enrollment(appId: "app", experimentId: "trial", appUserIds: ["bob"]) == nil)
        #expect(try await store.enrollment(appId: "app", experimentId: "other", appUserIds: ["alice"]) == nil)
        #expect(try await store.enrollment(appId: "other", experimentId: "trial", appUserIds: ["alice"]) == nil)
        #expect(try await store.enrollment(appId: "app", experimentId: "trial", appUserIds: []) == nil)

        // The cohort: anon's enrollment under the user it was linked to, and only the enrolled
        // customers' ledger (of the environment asked for).
        try await store.upsertProduct(
            appId: "app", product: Product(productId: "coins", type: .consumable, creditAmount: 10, priceMicros: 990_000, currency: "USD"),
            now: t0)
        /// One purchase of coins by `user`, granted (a ledger row) in `environment`.
        func buy(_ id: String, by user: String, in environment: String) async throws {
            let submitted = try await SubmitEvidence(store: store)(submission(user: user, receipt: "cohort-\(id)"), now: t0)
            let leases = try await lease(store, at: t0)
            guard let leased = leases.first(where: { $0.jobId == submitted.verification.jobId }) else {
                Issue.record("no lease for \(id)")
                return
            }
            let purchase = PurchaseEvidence.Purchase(transactionId: id, originalTransactionId: id, productId: "coins", purchaseDate: later)
            _ = try await VerificationOutcomes(store: store).completeVerified(
                leased, verificationId: submitted.verification.id,
                evidence: PurchaseEvidence(source: .receipt, bundleId: "com.example", environment: environment, purchases: [purchase], renewals: [:]),
                report: AttemptReport(statuses: [0], environment: environment, reason: nil), request: request, now: t0)
        }
        try await buy("t0", by: "anon", in: "production")
        _ = try await store.link(appId: "app", alias: "anon", to: "carol", transfer: true, now: later) { _ in EventBatch(events: []) }
        try await buy("t1", by: "carol", in: "production")
        try await buy("t2", by: "alice", in: "sandbox")
        try await buy("t3", by: "bob", in: "production")
        let cohort = try await store.experimentCohort(appId: "app", experimentId: "trial", environment: nil)
        #expect(cohort.enrollments.map(\.appUserId) == ["carol", "alice"] && cohort.enrollments.first?.arm == 1)
        #expect(cohort.ledger.map(\.transactionId).sorted() == ["t0", "t1", "t2"], "anon's purchase moved to carol; bob is not enrolled")
        let production = try await store.experimentCohort(appId: "app", experimentId: "trial", environment: "production")
        #expect(production.ledger.map(\.transactionId).sorted() == ["t0", "t1"])
        #expect(try await store.experimentCohort(appId: "app", experimentId: "other", environment: nil).enrollments.isEmpty)
    }

    @Test(
        "offerings: seeded once, edited, deleted; targeting and a user's override saved and cleared; every change audited in its transaction",
        arguments: StoreFactory.all)
    func offerings(factory: StoreFactory) async throws {
        let store = try await make(factory)
        #expect(try await store.offerings(appId: "app").offerings.isEmpty)
        #expect(try await store.offerings(appId: "app").targeting == OfferingTargeting())
        let main = Offering(
            id: "main", description: "Pro", packages: [OfferingPackage(id: "$monthly", productId: "pro.monthly")],
            metadata: .object(["title": .string("Go Pro"), "order": .array([.number(1), .bool(true), .null])]))
        let seeded = OfferingTargeting(current: "main", rules: [OfferingRule(id: "fr", offering: "main", storefronts: ["FRA"])])
        try await store.seedOfferings(appId: "app", offerings: [main], targeting: seeded, now: t0)
        var edited = main
        edited.packages.append(OfferingPackage(id: "$annual", productId: "pro.annual"))
        try await store.upsertOffering(appId: "app", offering: edited, audit: audit("offering_saved", "main", saved: edited), now: t0)
        let sale = Offering(id: "sale", packages: [OfferingPackage(id: "custom", productId: "pro.annual")])
        try await store.upsertOffering(appId: "app", offering: sale, audit: audit("offering_saved", "sale", saved: sale), now: t0)
        let targeting = OfferingTargeting(current: "sale", rules: [])
        try await store.saveOfferingTargeting(
            appId: "app", targeting: targeting, audit: audit("offering_targeting_saved", "targeting", saved: targeting), now: t0)
        // The next start's seed keeps every edit.
        try await store.seedOfferings(appId: "app", offerings: [main], targeting: seeded, now: t0)
        let stored = try await store.offerings(appId: "app")
        #expect(stored.offerings == [edited, sale] && stored.targeting == targeting)
        #expect(try await store.offerings(appId: "other").offerings.isEmpty)

        #expect(try await store.offeringOverride(appId: "app", appUserId: "alice") == nil)
        #expect(
            try await store.saveOfferingOverride(
                appId: "app", appUserId: "alice", offeringId: "main", audit: audit("offering_override_set", "main", user: "alice", saved: "main"),
                now: t0))
        #expect(
            try await store.saveOfferingOverride(
                appId: "app", appUserId: "alice", offeringId: "sale", audit: audit("offering_override_set", "sale", user: "alice", saved: "sale"),
                now: t0))
        #expect(try await store.offeringOverride(appId: "app", appUserId: "alice") == "sale")
        #expect(try await store.offeringOverride(appId: "app", appUserId: "bob") == nil)
        #expect(
            try await store.saveOfferingOverride(
                appId: "app", appUserId: "alice", offeringId: nil,
                audit: audit("offering_override_cleared", "override", user: "alice", saved: nil as String?), now: t0))
        #expect(
            try await store.saveOfferingOverride(
                appId: "app", appUserId: "alice", offeringId: nil,
                audit: audit("offering_override_cleared", "override", user: "alice", saved: nil as String?), now: t0) == false)
        #expect(try await store.offeringOverride(appId: "app", appUserId: "alice") == nil)

        #expect(
            try await store.deleteOffering(
                appId: "app", offeringId: "main", audit: audit("offering_deleted", "main", saved: nil as Offering?), now: t0))
        #expect(
            try await store.deleteOffering(
                appId: "app", offeringId: "main", audit: audit("offering_deleted", "main", saved: nil as Offering?), now: t0) == false)
        #expect(try await store.offerings(appId: "app").offerings == [sale])
        let log = try await store.auditEntries(appId: "app", after: 0, limit: 20).map(\.entry)
        #expect(
            log.map(\.action) == [
                "offering_saved", "offering_saved", "offering_targeting_saved", "offering_override_set", "offering_override_set",
                "offering_override_cleared", "offering_deleted",
            ])
        #expect(log.map(\.appUserId) == [nil, nil, nil, "alice", "alice", "alice", nil])
        guard case .object(let saved)? = log[0].change else { Issue.record("no change recorded"); return }
        #expect(saved["id"] == .string("main") && saved["packages"] != nil)
    }

    @Test(
        "promotional grants: stored once per id with an audit entry and events; revoked once; never in the ledger",
        arguments: StoreFactory.all)
    func promotionalGrants(factory: StoreFactory) async throws {
        let store = try await make(factory)
        try await store.seedEntitlements(appId: "app", definitions: [EntitlementDefinition(id: "pro", products: ["pro.monthly"])], now: t0)
        let manage = ManagePromotionalGrants(store: store)
        let request = ManagePromotionalGrants.GrantRequest(
            appId: "app", appUserId: "alice", entitlementId: "pro", duration: "P7D", actor: AuditActor(name: "support@example.com", reason: ""),
            reason: "outage",
            grantId: "6F1D2C3B-8A4E-4F5D-9B0C-1E2F3A4B5C6D")
        guard case .granted(let grant, created: true) = try await manage.grant(request, now: t0) else {
            Issue.record("not granted")
            return
        }
        #expect(grant.id == "6f1d2c3b-8a4e-4f5d-9b0c-1e2f3a4b5c6d" && grant.expiresAt == t0.addingTimeInterval(7 * 86_400))
        // A retry grants nothing more; the id reused for someone else is a conflict.
        #expect(try await manage.grant(request, now: t0.addingTimeInterval(5)) == .granted(grant, created: false))
        var other = request
        other.appUserId = "bob"
        #expect(try await manage.grant(other, now: t0) == .conflict(grant))
        var unknown = request
        unknown.entitlementId = "vip"
        unknown.grantId = nil
        #expect(try await manage.grant(unknown, now: t0) == .unknownEntitlement)

        let events = try await store.events(appId: "app", after: 0, types: [], limit: 10).map(\.event)
        #expect(events.map(\.type) == [.promotionalGrant, .entitlementGranted], "\(events.map(\.type))")
        #expect(events.last?.entitlements?.entitlements["pro"]?.source == .promotional && events.last?.details?.grantId == grant.id)

        guard
            case .revoked(let revoked, changed: true) = try await manage.revoke(
                appId: "app", grantId: grant.id, actor: AuditActor(name: "lead@example.com", reason: ""), reason: "granted by mistake",
                now: t0.addingTimeInterval(60))
        else {
            Issue.record("not revoked")
            return
        }
        #expect(revoked.revokedAt == t0.addingTimeInterval(60))
        #expect(
            try await manage.revoke(
                appId: "app", grantId: grant.id, actor: AuditActor(name: "lead@example.com", reason: ""), reason: "again",
                now: t0.addingTimeInterval(90))
                == .revoked(revoked, changed: false))
        #expect(try await manage.revoke(appId: "app", grantId: "nope", actor: AuditActor(name: "a", reason: ""), reason: "b", now: t0) == .notFound)
        let after = try await store.events(appId: "app", after: 0, types: [], limit: 10).map(\.event.type)
        #expect(after == [.promotionalGrant, .entitlementGranted, .promotionalGrantRevoked, .entitlementRevoked], "\(after)")
        let audit = try await ManageAdminTokens(store: store).audit(AuditQuery(appIds: ["app"], limit: 10))
        #expect(audit.map(\.entry.action) == ["promotional_grant", "promotional_grant_revoked"])
        #expect(audit.map(\.entry.actor) == ["support@example.com", "lead@example.com"] && audit[0].cursor < audit[1].cursor)
        #expect(
            try await ManageAdminTokens(store: store).audit(AuditQuery(appIds: ["app"], after: audit[0].cursor, limit: 10)).map(\.entry.reason) == [
                "granted by mistake"
            ])
        #expect(try await manage.grants(appId: "app", appUserId: "alice") == [revoked])
        #expect(try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture)).isEmpty)
        #expect(try await store.ledger(LedgerQuery(appId: "app", environment: "production", from: .distantPast, to: .distantFuture)).isEmpty)
    }

    // MARK: Many writers at once (several processes on PostgreSQL; tasks stand in for them here)

    @Test("concurrent runners never lease the same job twice", arguments: StoreFactory.all)
    func concurrentLeasing(factory: StoreFactory) async throws {
        let store = try await factory.make()
        for i in 0..<60 { _ = try await SubmitEvidence(store: store)(submission(user: "u\(i)"), now: t0) }
        let leases = try await withThrowingTaskGroup(of: [JobLease].self) { group in
            for runner in 0..<6 {
                group.addTask {
                    var mine: [JobLease] = []
                    while true {
                        let batch = try await store.leaseJobs(
                            kinds: ["verify_receipt"], limit: 4, owner: "runner-\(runner)", now: self.t0, leaseDuration: 30)
                        if batch.isEmpty { return mine }
                        mine += batch
                    }
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        #expect(leases.count == 60)
        #expect(Set(leases.map(\.jobId)).count == 60)
        #expect(try await store.jobCounts()[.running] == 60)
    }

    @Test("the same receipt posted at once from many places is stored once", arguments: StoreFactory.all)
    func concurrentSubmissions(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let results = try await withThrowingTaskGroup(of: SubmissionResult.self) { group in
            for _ in 0..<20 { group.addTask { try await SubmitEvidence(store: store)(self.submission(), now: self.t0) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter(\.created).count == 1)
        #expect(Set(results.map(\.verification.id)).count == 1)
        #expect(try await store.jobCounts()[.available] == 1)
    }

    @Test("receipts sharing purchases, granted at once by different runners, grant each purchase once", arguments: StoreFactory.all)
    func concurrentGrants(factory: StoreFactory) async throws {
        let store = try await make(factory)
        // Eight receipts of one user (each a later snapshot of the same history: the newest holds
        // every purchase), and two receipts of another user replaying the first user's purchases.
        var submitted: [(user: String, id: String, count: Int)] = []
        for i in 1...8 {
            let v = try await SubmitEvidence(store: store)(submission(user: "alice", receipt: "r\(i)"), now: t0)
            submitted.append(("alice", v.verification.id, i))
        }
        for i in 1...2 {
            let v = try await SubmitEvidence(store: store)(submission(user: "mallory", receipt: "m\(i)"), now: t0)
            submitted.append(("mallory", v.verification.id, 8))
        }
        let leases = try await lease(store, at: t0, limit: 20)
        #expect(leases.count == 10)
        let byVerification = Dictionary(uniqueKeysWithValues: submitted.map { ($0.id, $0) })
        let verificationIds = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for lease in leases {
                group.addTask { (lease.jobId, try #require(try await store.verificationForJob(jobId: lease.jobId)).0.id) }
            }
            return try await group.reduce(into: [String: String]()) { $0[$1.0] = $1.1 }
        }
        let report = AttemptReport(statuses: [0], environment: "sandbox", reason: nil)
        let results = try await withThrowingTaskGroup(of: GrantResult.self) { group in
            for lease in leases {
                let id = try #require(verificationIds[lease.jobId])
                let count = try #require(byVerification[id]).count
                group.addTask {
                    try await VerificationOutcomes(store: store).completeVerified(
                        lease, verificationId: id,
                        evidence: PurchaseEvidence(verifyReceipt: self.response((1...count).map { self.coins("t\($0)") }), environment: .sandbox)!,
                        report: report, request: self.request, now: self.t0.addingTimeInterval(1))
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        var granted: [String] = []
        var conflicts = 0
        for result in results {
            guard case .granted(let summary) = result else {
                Issue.record("every lease was current: \(result)")
                continue
            }
            granted += summary.granted
            conflicts += summary.conflicts.count
        }
        // Every purchase granted exactly once, to whichever user's receipt was granted first;
        // the other user's copies are refused as conflicts (binding policy "refuse").
        #expect(granted.sorted() == (1...8).map { "t\($0)" }.sorted())
        #expect(try await store.countTransactions(appId: "app") == 8)
        let alice = try await store.transactions(appId: "app", appUserId: "alice").count
        let mallory = try await store.transactions(appId: "app", appUserId: "mallory").count
        #expect(alice + mallory == 8 && conflicts > 0)
        let ledger = try await store.ledger(LedgerQuery(appId: "app", environment: "sandbox", from: .distantPast, to: .distantFuture))
        #expect(ledger.count == 8 && Set(ledger.map(\.transactionId)).count == 8)
        #expect(try await store.jobCounts()[.completed] == 10)
    }

    @Test("verification reads: listing filters, counts, invalid and requeue", arguments: StoreFactory.all)
    func verificationReads(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let a = try await SubmitEvidence(store: store)(submission(user: "a"), now: t0)
        let b = try await SubmitEvidence(store: store)(submission(user: "b"), now: t0.addingTimeInterval(10))
        let first = try #require(try await lease(store, at: t0.addingTimeInterval(20), limit: 1).first)
        #expect(try await store.verificationForJob(jobId: first.jobId)?.0.id == a.verification.id)
        #expect(try await store.verificationForJob(jobId: first.jobId)?.evidence == "cmVjZWlwdA==")
        #expect(try await VerificationOutcomes(store: store).markVerifying(first, verificationId: a.verification.id, now: t0.addingTimeInterval(20)))
        // A manual retry of a verification being verified is refused while its lease lasts.
        #expect(try await RequeueVerification(store: store)(verificationId: a.verification.id, now: t0.addingTimeInterval(21)) == .busy)
        let invalid = AttemptReport(statuses: [21002], environment: nil, reason: "receipt_malformed")
        #expect(
            try await VerificationOutcomes(store: store).finishInvalid(
                first, verificationId: a.verification.id, report: invalid, now: t0.addingTimeInterval(21)))
        #expect(
            try await VerificationOutcomes(store: store).finishInvalid(
                first, verificationId: a.verification.id, report: invalid, now: t0.addingTimeInterval(21)) == false)

        #expect(
            try await store.verifications(appId: nil, states: [], createdBefore: nil, limit: 10).map(\.id) == [a.verification.id, b.verification.id])
        #expect(try await store.verifications(appId: "app", states: [.invalid], createdBefore: nil, limit: 10).map(\.id) == [a.verification.id])
        #expect(try await store.verifications(appId: "other", states: [], createdBefore: nil, limit: 10).isEmpty)
        #expect(try await store.verifications(appId: nil, states: [], createdBefore: t0.addingTimeInterval(5), limit: 10).count == 1)
        #expect(try await store.verifications(appId: nil, states: [], createdBefore: nil, limit: 1).count == 1)
        #expect(try await store.verificationCounts() == [.invalid: 1, .pending: 1])
        #expect(try await store.countVerifications(states: [.pending], createdBefore: t0.addingTimeInterval(60)) == 1)
        #expect(try await store.countVerifications(states: [.pending], createdBefore: t0) == 0)

        #expect(try await RequeueVerification(store: store)(verificationId: a.verification.id, now: t0.addingTimeInterval(30)) == .requeued)
        let again = try #require(try await store.verification(id: a.verification.id))
        #expect(again.state == .pending && again.finalizedAt == nil && again.appleStatuses == [21002])
        #expect(try await lease(store, at: t0.addingTimeInterval(31)).count == 2)
    }

    @Test("notifications: stored once per UUID with the submission they cause; owners come from bindings", arguments: StoreFactory.all)
    func notifications(factory: StoreFactory) async throws {
        let store = try await make(factory)
        #expect(try await store.owner(appId: "app", originalTransactionId: "1") == nil)
        let submitted = try await SubmitEvidence(store: store)(submission(), now: t0)
        let held = try #require(try await lease(store, at: t0).first)
        _ = try await VerificationOutcomes(store: store).completeVerified(
            held, verificationId: submitted.verification.id,
            evidence: PurchaseEvidence(verifyReceipt: response([coins("1")]), environment: .sandbox)!,
            report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil), request: request, now: t0)
        #expect(try await store.owner(appId: "app", originalTransactionId: "1") == "alice")

        let notification = IngestNotification.Notification(
            appId: "app", notificationUUID: "n-1", notificationType: "DID_RENEW", subtype: nil, signedDate: t0,
            originalTransactionId: "1", environment: "sandbox", payload: "nested-jws", version: .v2,
            purchase: .grant(.notification(signedPayload: "nested-jws"), evidenceHash: "nested"))
        let first = try await IngestNotification(store: store)(notification, now: t0)
        let again = try await IngestNotification(store: store)(notification, now: t0)
        #expect(first.created && first.outcome == .submitted && first.verificationId != nil)
        #expect(!again.created && again.verificationId == nil)
        var unclaimed = notification
        unclaimed.notificationUUID = "n-2"
        unclaimed.originalTransactionId = "2"
        let nobody = try await IngestNotification(store: store)(unclaimed, now: t0)
        #expect(nobody.created && nobody.outcome == .unowned && nobody.verificationId == nil)
        let jobs = try await store.leaseJobs(kinds: [verifySignedTransactionJobKind], limit: 10, owner: "t", now: t0, leaseDuration: 30)
        #expect(jobs.count == 1)
        #expect(try await store.verificationForJob(jobId: jobs[0].jobId)?.evidence == "nested-jws")
    }
}
