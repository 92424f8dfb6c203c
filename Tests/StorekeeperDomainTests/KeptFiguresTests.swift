import Foundation
import StorekeeperDomain
import Testing

/// The figures a store keeps with each grant (`MetricContribution` → `MetricReadout`) say exactly
/// what the full computation over every transaction says: on the worked example at instants on
/// and between midnights, and on generated histories (gaps, trials, refunds, upgrades, grace,
/// billing retry, several currencies) at many instants, by day, week and month.
@Suite("kept figures: contributions and day totals agree with the full computation")
struct KeptFiguresTests {
    typealias Example = SubscriptionMetricsTests

    /// What a store keeps for `transactions` and `facts`, read at `now`.
    static func readout(
        _ transactions: [TransactionRecord], facts: [SubscriptionFacts], catalog: [String: Product], now: Date, interval: ReportInterval
    ) -> MetricReadout {
        let factsByOriginal = Dictionary(facts.map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { a, _ in a })
        var kept: [MetricReadout.Sourced] = []
        for (original, records) in Dictionary(grouping: transactions, by: \.originalTransactionId) {
            kept += MetricContribution.subscription(records.shuffled(), facts: factsByOriginal[original], catalog: catalog).map {
                MetricReadout.Sourced(source: original, contribution: $0)
            }
            for record in records {
                kept += MetricContribution.consumable(record).map {
                    MetricReadout.Sourced(source: MetricContribution.source(consumable: record.transactionId), contribution: $0)
                }
            }
        }
        return MetricReadout.reading(kept, now: now, interval: interval)
    }

    static func expectAgreement(
        _ transactions: [TransactionRecord], facts: [SubscriptionFacts], catalog: [String: Product], from: Date, now: Date,
        reporting: ReportingCurrency? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for interval in ReportInterval.allCases {
            let full = SubscriptionMetrics.build(
                transactions: transactions, facts: facts, catalog: catalog, interval: interval, from: from, to: now, now: now,
                reporting: reporting)
            let kept = SubscriptionMetrics.build(
                readout: readout(transactions, facts: facts, catalog: catalog, now: now, interval: interval), interval: interval, from: from,
                to: now, now: now, reporting: reporting)
            #expect(kept == full, "\(interval) at \(now)", sourceLocation: sourceLocation)
        }
    }

    @Test("the worked example, at midnights and between them, in the reporting currency too")
    func workedExample() {
        let reporting = ReportingCurrency(currency: "USD", rates: ["2026-03": ["EUR": "1.0800"], "2026-04": ["EUR": "1.0850"]])
        for now in [
            Example.date(4, 15), Example.date(4, 15).addingTimeInterval(13 * 3_600 + 0.25), Example.date(3, 10),
            Example.date(3, 15).addingTimeInterval(1), Example.date(4, 14).addingTimeInterval(0.001), Example.date(4, 20),
            Example.date(6, 1).addingTimeInterval(7_200),
        ] {
            let known = Example.history.filter { $0.purchaseDate <= now }
            Self.expectAgreement(known, facts: Example.subscriptionFacts, catalog: Example.catalog, from: Example.date(1, 1), now: now)
            Self.expectAgreement(
                known, facts: Example.subscriptionFacts, catalog: Example.catalog, from: Example.date(1, 1), now: now, reporting: reporting)
        }
    }

    @Test("generated histories at many instants, by day, week and month")
    func generatedHistories() {
        var random = SeededRandom(seed: 20_261_126)
        for _ in 0..<6 {
            let (transactions, facts, last) = Self.history(subscriptions: 60, random: &random)
            // Within the history (what was bought by then) and after it.
            let span = Int(last.timeIntervalSince(Self.start) * 1_000) + 60 * 86_400_000
            for _ in 0..<6 {
                let now = Self.start.addingTimeInterval(Double(random.next(upTo: span)) / 1_000)
                let known = transactions.filter { $0.purchaseDate <= now }
                Self.expectAgreement(known, facts: facts, catalog: Self.catalog, from: Self.start, now: now)
            }
        }
    }

    @Test("a contribution counts in the day total of the midnight at or after a step, before an event")
    func dayTotals() {
        let midnight = Example.date(3, 1)
        let later = midnight.addingTimeInterval(0.001)
        #expect(MetricContribution(kind: .paying, at: midnight).day == midnight)
        #expect(MetricContribution(kind: .paying, at: later).day == Example.date(3, 2))
        #expect(MetricContribution(kind: .firstPaid, at: later).day == midnight)
        #expect(MetricContribution(kind: .churnMonth, at: midnight).day == midnight)
    }

    @Test("a subscription's steps: +1 and −1 around each run of paid access, MRR per currency, its churn once per period")
    func steps() {
        let records = [
            Example.tx("a1", "alice", "m", from: Example.date(1, 10), to: Example.date(2, 10), charged: 9_990),
            Example.tx("a2", "alice", "m", original: "a1", from: Example.date(2, 10), to: Example.date(3, 10), charged: 9_990),
            // Back after a gap, then gone again within the same month.
            Example.tx("a3", "alice", "m", original: "a1", from: Example.date(3, 12), to: Example.date(3, 20), charged: 9_990),
        ]
        let kept = MetricContribution.subscription(records, facts: nil, catalog: Example.catalog)
        let paying = kept.filter { $0.kind == .paying }.map { "\($0.amount)@\(Example.calendar.component(.day, from: $0.at))" }
        #expect(paying == ["1@10", "-1@10", "1@12", "-1@20"])
        #expect(kept.filter { $0.kind == .mrr }.map(\.amount) == [9_990_000, -9_990_000, 9_990_000, -9_990_000])
        #expect(kept.filter { $0.kind == .churnMonth }.map(\.at) == [Example.date(3, 1)])
        let ends = kept.filter { $0.kind == .paidEnd }
        #expect(ends.map(\.since) == [Example.date(1, 10), Example.date(3, 12)] && ends.map(\.until) == [Example.date(3, 12), nil])
        #expect(kept.filter { $0.kind == .firstPaid }.map(\.at) == [Example.date(1, 10)])
    }

    @Test("the month under way: one who began and lapsed within it has not churned; one paying at its start and lapsed has")
    func churnUnderWay() {
        let records = [
            Example.tx("w1", "walt", "w", from: Example.date(3, 3), to: Example.date(3, 10), charged: 2_990),
            Example.tx("m1", "mia", "m", from: Example.date(2, 5), to: Example.date(3, 5), charged: 9_990),
        ]
        let now = Example.date(3, 20).addingTimeInterval(3_600)
        let kept = SubscriptionMetrics.build(
            readout: Self.readout(records, facts: [], catalog: Example.catalog, now: now, interval: .month), interval: .month,
            from: Example.date(3, 1), to: now, now: now)
        #expect(kept.periods.map(\.churned) == [1] && kept.periods.map(\.activeAtStart) == [1])
    }

    // MARK: Generated histories

    static let start = Example.date(1, 1)
    static let catalog: [String: Product] = [
        "m": Product(productId: "m", type: .autoRenewable, duration: "P1M", priceMicros: 9_990_000, currency: "USD"),
        "y": Product(productId: "y", type: .autoRenewable, duration: "P1Y", priceMicros: 99_990_000, currency: "USD"),
        "w": Product(productId: "w", type: .autoRenewable, duration: "P1W", priceMicros: 2_990_000, currency: "USD"),
        "coins": Product(productId: "coins", type: .consumable, creditAmount: 100),
    ]

    /// Subscriptions renewing with gaps, trials, refunds and upgrades, at instants to the
    /// millisecond; a few consumables; facts with grace and billing retry. `last` is the latest purchase.
    static func history(
        subscriptions: Int, random: inout SeededRandom
    ) -> (transactions: [TransactionRecord], facts: [SubscriptionFacts], last: Date) {
        var transactions: [TransactionRecord] = []
        var facts: [SubscriptionFacts] = []
        let day: TimeInterval = 86_400
        for index in 0..<subscriptions {
            let original = "s\(index)"
            let user = "u\(index)"
            var at = start.addingTimeInterval(Double(random.next(upTo: 200 * 86_400_000)) / 1_000)
            var product = ["m", "y", "w"][random.next(upTo: 3)]
            let currency = ["USD", "EUR", "JPY"][random.next(upTo: 3)]
            var trial = random.next(upTo: 3) == 0
            var last: TransactionRecord?
            for renewal in 0..<(1 + random.next(upTo: 6)) {
                let length: TimeInterval =
                    trial ? 7 * day : product == "m" ? 30 * day : product == "w" ? 7 * day : 365 * day
                var refunded: Date?
                if !trial, random.next(upTo: 8) == 0 { refunded = at.addingTimeInterval(Double(random.next(upTo: Int(length * 1_000))) / 1_000) }
                let record = Example.tx(
                    "\(original)-\(renewal)", user, "m", original: original, from: at, to: at.addingTimeInterval(length),
                    charged: trial ? 0 : Int64(1_000 + random.next(upTo: 20_000)), currency: currency, refundedAt: refunded, trial: trial)
                var typed = record
                typed.productId = product
                transactions.append(typed)
                last = typed
                trial = false
                // Renew at once, after a gap, or upgrade part-way (the old period revoked then).
                switch random.next(upTo: 6) {
                case 0: at = at.addingTimeInterval(length + Double(random.next(upTo: 40 * 86_400_000)) / 1_000)
                case 1:
                    let upgrade = at.addingTimeInterval(Double(random.next(upTo: Int(length * 1_000))) / 1_000)
                    if refunded == nil { transactions[transactions.count - 1].cancellationDate = upgrade }
                    at = upgrade
                    product = "y"
                default: at = at.addingTimeInterval(length)
                }
            }
            if let last, random.next(upTo: 3) == 0, let expires = last.expiresDate {
                let grace = random.next(upTo: 2) == 0 ? expires.addingTimeInterval(Double(1 + random.next(upTo: 16)) * day) : nil
                facts.append(
                    SubscriptionFacts(
                        appId: "app", originalTransactionId: original, appUserId: user, productId: last.productId, environment: "production",
                        latestTransactionId: last.transactionId, expiresDate: expires, revokedAt: nil, autoRenewEnabled: true,
                        autoRenewProductId: last.productId, inBillingRetry: random.next(upTo: 2) == 0, gracePeriodExpiresDate: grace,
                        expirationIntent: nil, updatedAt: expires))
            }
            if random.next(upTo: 4) == 0 {
                let bought = start.addingTimeInterval(Double(random.next(upTo: 200 * 86_400_000)) / 1_000)
                transactions.append(
                    Example.tx(
                        "c\(index)", user, "coins", from: bought, charged: 990,
                        refundedAt: random.next(upTo: 3) == 0 ? bought.addingTimeInterval(3_600) : nil))
            }
        }
        return (transactions, facts, transactions.map(\.purchaseDate).max() ?? start)
    }
}

/// A deterministic generator (SplitMix64), so a failure repeats.
struct SeededRandom {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next(upTo bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }
}
