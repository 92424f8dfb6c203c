import Foundation
import StorekeeperDomain
import Testing

/// Subscription figures and cohorts on a hand-computed history: the worked example of
/// docs/ANALYTICS.md. Month boundaries, annual, weekly and commitment plans, a refund, an upgrade,
/// trials that convert and that do not, billing retry, grace, Family Sharing.
@Suite("subscription figures: active, trials, MRR, churn, conversion, credits, cohorts at fixed instants")
struct SubscriptionMetricsTests {
    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// 2026-`month`-`day` 00:00 UTC (a month past 12 is in 2027).
    static func date(_ month: Int, _ day: Int) -> Date {
        calendar.date(from: DateComponents(year: 2026, month: month, day: day))!
    }

    static let now = date(4, 15)
    static let catalog: [String: Product] = [
        "m": Product(productId: "m", type: .autoRenewable, duration: "P1M", priceMicros: 9_990_000, currency: "USD"),
        "y": Product(productId: "y", type: .autoRenewable, duration: "P1Y", priceMicros: 99_990_000, currency: "USD"),
        "w": Product(productId: "w", type: .autoRenewable, duration: "P1W", priceMicros: 2_990_000, currency: "USD"),
        // A year's commitment billed monthly: each payment is a month's.
        "c": Product(productId: "c", type: .autoRenewable, duration: "P1Y", priceMicros: 4_990_000, currency: "USD"),
        "coins": Product(productId: "coins", type: .consumable, creditAmount: 100),
    ]

    static func tx(
        _ id: String, _ user: String, _ product: String, original: String? = nil, from start: Date, to end: Date? = nil,
        charged: Int64? = nil, currency: String = "USD", refundedAt: Date? = nil, trial: Bool = false, family: Bool = false
    ) -> TransactionRecord {
        var record = TransactionRecord(
            appId: "app", appUserId: user, transactionId: id, originalTransactionId: original ?? id, productId: product,
            productType: catalog[product]!.type, environment: "production", purchaseDate: start, originalPurchaseDate: start,
            expiresDate: end, cancellationDate: refundedAt, quantity: 1, credits: product == "coins" ? 100 : 0,
            ownershipType: family ? "FAMILY_SHARED" : "PURCHASED", verificationId: "v\(id)")
        record.price = charged.map { ChargedPrice(milliunits: $0, currency: currency) }
        if trial { record.offer = PurchaseOffer(type: PurchaseOffer.introductory, discountType: PurchaseOffer.freeTrial, period: "P1W") }
        if product == "c" { record.billingPlanType = "MONTHLY" }
        return record
    }

    static func facts(_ original: String, _ user: String, expires: Date, retry: Bool, grace: Date? = nil) -> SubscriptionFacts {
        SubscriptionFacts(
            appId: "app", originalTransactionId: original, appUserId: user, productId: "m", environment: "production",
            latestTransactionId: original, expiresDate: expires, revokedAt: nil, autoRenewEnabled: true, autoRenewProductId: "m",
            inBillingRetry: retry, gracePeriodExpiresDate: grace, expirationIntent: nil, updatedAt: expires)
    }

    static let history: [TransactionRecord] = [
        tx("a1", "alice", "m", from: date(1, 10), to: date(2, 10), charged: 9_990),
        tx("a2", "alice", "m", original: "a1", from: date(2, 10), to: date(3, 10), charged: 9_990),
        tx("b1", "bob", "y", from: date(1, 20), to: date(13, 20), charged: 49_990, currency: "EUR"),
        tx("c1", "carol", "m", from: date(2, 1), to: date(2, 8), charged: 0, trial: true),
        tx("c2", "carol", "m", original: "c1", from: date(2, 8), to: date(3, 8), charged: 9_990),
        tx("d1", "dave", "m", from: date(2, 3), to: date(2, 10), charged: 0, trial: true),
        tx("e1", "erin", "m", from: date(1, 5), to: date(2, 5), charged: 9_990, refundedAt: date(1, 20)),
        // An upgrade within the group: the monthly period is revoked when the annual one starts.
        tx("f1", "frank", "m", from: date(3, 2), to: date(4, 2), charged: 9_990, refundedAt: date(3, 15)),
        tx("f2", "frank", "y", original: "f1", from: date(3, 15), to: date(15, 15), charged: 99_990),
        tx("g1", "gina", "m", from: date(1, 1), to: date(13, 1), charged: 9_990, family: true),
        tx("h1", "hank", "w", from: date(3, 30), to: date(4, 6), charged: 2_990),
        tx("i1", "ivy", "c", from: date(4, 2), to: date(5, 2), charged: 4_990),
        tx("j1", "jack", "coins", from: date(2, 14), charged: 990),
        tx("j2", "jack", "coins", from: date(2, 20), charged: 990, refundedAt: date(2, 21)),
        tx("k1", "kate", "m", from: date(3, 15), to: date(4, 14), charged: 9_990),
        tx("l1", "liam", "m", from: date(3, 14), to: date(4, 14), charged: 9_990),
    ]
    static let subscriptionFacts = [
        facts("k1", "kate", expires: date(4, 14), retry: true),
        facts("l1", "liam", expires: date(4, 14), retry: true, grace: date(4, 20)),
    ]

    static func metrics(now: Date = now, reporting: ReportingCurrency? = nil) -> SubscriptionMetrics {
        SubscriptionMetrics.build(
            transactions: history.shuffled(), facts: subscriptionFacts, catalog: catalog, interval: .month, from: date(1, 1),
            to: date(5, 1), now: now, reporting: reporting)
    }

    static func usd(_ micros: Int64) -> SubscriptionMetrics.Amount { .init(currency: "USD", micros: micros) }
    static let bobMonthly = SubscriptionMetrics.Amount(currency: "EUR", micros: 4_165_833)  // 49.99 ÷ 12

    @Test("by month: active at each start and end, new subscriptions, MRR per currency; the month under way closes now")
    func monthly() {
        let report = Self.metrics()
        #expect(report.periods.map(\.start) == [Self.date(1, 1), Self.date(2, 1), Self.date(3, 1), Self.date(4, 1)])
        #expect(report.periods.map(\.activeAtStart) == [0, 2, 3, 5])
        #expect(report.periods.map(\.closing.activeSubscriptions) == [2, 3, 5, 4])
        #expect(report.periods.map(\.newSubscriptions) == [3, 1, 4, 1])
        #expect(report.periods.last?.closing.at == Self.now && report.periods.last?.end == Self.date(5, 1))
        // January: Alice's month and Bob's year (Erin's refunded month has ended); the family copy is nobody's.
        #expect(report.periods[0].closing.mrr == [Self.bobMonthly, Self.usd(9_990_000)])
        #expect(report.periods[1].closing.mrr == [Self.bobMonthly, Self.usd(19_980_000)])
        // 1 April: Frank's year (99.99 ÷ 12), Hank's week (2.99 × 52 ÷ 12, rounded), Kate's and Liam's months.
        #expect(report.periods[2].closing.mrr == [Self.bobMonthly, Self.usd(8_332_500 + 12_956_667 + 9_990_000 * 2)])
        // Now: Frank, Ivy's commitment billed monthly (4.99), Liam in grace; Kate in billing retry is not.
        #expect(report.periods[3].closing.mrr == [Self.bobMonthly, Self.usd(8_332_500 + 4_990_000 + 9_990_000)])
        #expect(report.current.snapshot == report.periods[3].closing)
        #expect(report.unknownPeriods == nil)
    }

    @Test("churn: of those paying at a period's start, the share without paid access at its close")
    func churn() {
        let report = Self.metrics()
        #expect(report.periods.map(\.churned) == [0, 0, 2, 2])
        #expect(report.periods.map(\.churnRate) == [nil, 0, 0.666667, 0.4])
    }

    @Test("trials: active, started, converted within 60 days of their end, pending until then")
    func trials() {
        let report = Self.metrics()
        #expect(report.periods[1].trialsStarted == 2 && report.periods[1].trialsConverted == 1 && report.periods[1].trialsPending == 0)
        #expect(report.periods[1].trialConversionRate == 0.5)
        #expect(report.periods.map(\.trialsStarted) == [0, 2, 0, 0])
        // On 1 March Dave's trial (ended 10 February) could still convert until 11 April: pending.
        let early = Self.metrics(now: Self.date(3, 1))
        #expect(early.periods[1].trialsPending == 1 && early.periods[1].trialConversionRate == 1)
        // On 5 February both trials run.
        let during = Self.metrics(now: Self.date(2, 5))
        #expect(during.current.snapshot.activeTrials == 2 && during.current.snapshot.activeSubscriptions == 2)
    }

    @Test("an upgrade counts once, at the new plan's price from the upgrade on")
    func upgrade() {
        let beforeUpgrade = Self.metrics(now: Self.date(3, 10).addingTimeInterval(3_600))
        #expect(beforeUpgrade.current.snapshot.activeSubscriptions == 2)
        #expect(beforeUpgrade.current.snapshot.mrr == [Self.bobMonthly, Self.usd(9_990_000)])
        let after = Self.metrics(now: Self.date(3, 20))
        #expect(after.current.snapshot.mrr == [Self.bobMonthly, Self.usd(8_332_500 + 9_990_000 * 2)])
    }

    @Test("billing retry (no access) and grace (access) now; credits sold and refunded by purchase month")
    func retryGraceCredits() {
        let report = Self.metrics()
        #expect(report.current.inBillingRetry == 1 && report.current.inGracePeriod == 1)
        #expect(report.periods.map(\.creditsSold) == [0, 200, 0, 0])
        #expect(report.periods.map(\.creditsRefunded) == [0, 100, 0, 0])
    }

    @Test("MRR in the reporting currency at the rate of the closing instant's month; a missing rate is named, never guessed")
    func reporting() {
        let report = Self.metrics(reporting: ReportingCurrency(currency: "USD", rates: ["2026-04": ["EUR": "1.0850"]]))
        // 4.165833 EUR × 1.085 = 4.519928805 → 4.519929 USD.
        #expect(report.current.snapshot.mrrReporting == Self.usd(8_332_500 + 4_990_000 + 9_990_000 + 4_519_929))
        #expect(report.current.snapshot.missingRates == nil)
        #expect(report.periods[1].closing.missingRates == ["2026-03 EUR"])
        #expect(report.periods[1].closing.mrrReporting == Self.usd(19_980_000))
    }

    @Test("a billing period from the transaction's dates in production when the catalog has none; unknown ones are named")
    func inferredPeriod() {
        var catalog = Self.catalog
        catalog["m"]?.duration = nil
        let odd = Self.tx("z1", "zoe", "m", from: Self.date(4, 10), to: Self.date(4, 20), charged: 1_000)
        let report = SubscriptionMetrics.build(
            transactions: Self.history + [odd], facts: Self.subscriptionFacts, catalog: catalog, interval: .month,
            from: Self.date(4, 1), to: Self.date(5, 1), now: Self.now)
        // Liam's month is read from its dates; Zoe's ten days are no known period: active, not in MRR.
        #expect(report.current.snapshot.activeSubscriptions == 5)
        #expect(report.current.snapshot.mrr == [Self.bobMonthly, Self.usd(8_332_500 + 4_990_000 + 9_990_000)])
        #expect(report.unknownPeriods == ["m"])
    }

    @Test("cohorts by first paid month: trials and family copies are nobody's; retention by month up to now")
    func cohorts() {
        let report = CohortReport.build(
            transactions: Self.history.shuffled(), facts: Self.subscriptionFacts, catalog: Self.catalog, from: Self.date(1, 1),
            to: Self.date(5, 1), now: Self.now)
        #expect(report.cohorts.map(\.month) == ["2026-01", "2026-02", "2026-03", "2026-04"])
        #expect(report.cohorts.map(\.customers) == [3, 2, 4, 1])
        #expect(report.cohorts.map(\.retained) == [[3, 2, 2, 1], [2, 1, 0], [4, 4], [1]])
        let march = CohortReport.build(
            transactions: Self.history, facts: [], catalog: Self.catalog, from: Self.date(3, 1), to: Self.date(4, 1), now: Self.now)
        #expect(march.cohorts.map(\.month) == ["2026-03"])
    }

    @Test("weeks and days: periods start on Monday and at midnight UTC; a range is cut at now")
    func weeksAndDays() {
        let weekly = SubscriptionMetrics.build(
            transactions: Self.history, facts: Self.subscriptionFacts, catalog: Self.catalog, interval: .week, from: Self.date(4, 1),
            to: Self.date(6, 1), now: Self.now)
        // 2026-03-30 is a Monday; now (Wednesday 15 April) falls in the week of the 13th.
        #expect(weekly.periods.map(\.start) == [Self.date(3, 30), Self.date(4, 6), Self.date(4, 13)])
        // Hank's week begins at that Monday's first instant: active at its start, and new in it (with Ivy's).
        #expect(weekly.periods[0].newSubscriptions == 2 && weekly.periods[0].activeAtStart == 5)
        let daily = SubscriptionMetrics.build(
            transactions: Self.history, facts: Self.subscriptionFacts, catalog: Self.catalog, interval: .day, from: Self.date(4, 13),
            to: Self.date(4, 20), now: Self.now)
        #expect(daily.periods.map(\.start) == [Self.date(4, 13), Self.date(4, 14)])
        // Kate's and Liam's months end at the 14th's first instant: Kate's access goes with the 13th, Liam's grace keeps his.
        #expect(daily.periods[0].activeAtStart == 5 && daily.periods[0].closing.activeSubscriptions == 4 && daily.periods[0].churned == 1)
        #expect(daily.periods[1].activeAtStart == 4 && daily.periods[1].churned == 0)
    }

    @Test("a catalog duration: required and checked for a non-renewing pass, checked for an auto-renewable, ignored for other types")
    func catalogDurations() {
        #expect(Product(productId: "m", type: .autoRenewable, duration: "P1M").validationProblems().isEmpty)
        #expect(Product(productId: "m", type: .autoRenewable).validationProblems().isEmpty)
        #expect(Product(productId: "m", type: .autoRenewable, duration: "").validationProblems() == ["duration: '' is not an ISO 8601 duration"])
        #expect(Product(productId: "x", type: .nonConsumable, duration: "").validationProblems().isEmpty)
        #expect(Product(productId: "s", type: .nonRenewing).validationProblems() == ["duration: required for non-renewing subscriptions"])
    }
}
