import Foundation
import StorekeeperDomain
import Testing

/// docs/ANALYTICS.md's worked example of realized lifetime value, reproduced.
@Suite("lifetime value: what each cohort paid 30, 90, 180 and 365 days after its first payment")
struct LifetimeValueReportTests {
    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text + "T12:00:00Z")! }

    static func entry(
        _ user: String, _ day: String, _ event: LedgerEntry.Event = .purchase, price: Int64, proceeds: Int64, currency: String = "USD"
    ) -> LedgerEntry {
        var entry = LedgerEntry(
            appId: "app", appUserId: user, productId: "pro", productType: .autoRenewable, transactionId: "\(user)-\(day)-\(event)",
            originalTransactionId: "\(user)-sub", environment: "production", purchaseDate: date(day), event: event, quantity: 1,
            priceMicros: price, currency: currency, state: "verified", recordedAt: date(day))
        entry.proceedsMicros = proceeds
        return entry
    }

    /// alice pays 4.99 on 10 January, renews on 10 February (refunded on the 15th) and on 10 May;
    /// bob starts a free trial on 20 January and pays 9.99 EUR on the 27th; carol pays 2.99 on
    /// 3 February; dave only ever had a free trial.
    static let ledger = [
        entry("alice", "2026-01-10", price: 4_990_000, proceeds: 3_493_000),
        entry("alice", "2026-02-10", price: 4_990_000, proceeds: 3_493_000),
        entry("alice", "2026-02-15", .refund, price: -4_990_000, proceeds: -3_493_000),
        entry("alice", "2026-05-10", price: 4_990_000, proceeds: 3_493_000),
        entry("bob", "2026-01-20", price: 0, proceeds: 0, currency: "EUR"),
        entry("bob", "2026-01-27", price: 9_990_000, proceeds: 6_993_000, currency: "EUR"),
        entry("carol", "2026-02-03", price: 2_990_000, proceeds: 2_093_000),
        entry("dave", "2026-01-05", price: 0, proceeds: 0),
    ]

    @Test("the worked example: cohorts by first payment, horizons reached only, refunds taken back, each currency apart")
    func workedExample() throws {
        let now = Self.date("2026-06-01")
        let report = LifetimeValueReport.build(Self.ledger, from: Self.date("2026-01-01"), to: now, now: now)
        #expect(report.cohorts.map(\.month) == ["2026-01", "2026-02"] && report.cohorts.map(\.customers) == [2, 1])
        let january = report.cohorts[0].values.map { ($0.days, $0.currency, $0.customers, $0.grossMicros, $0.grossPerCustomerMicros) }
        // 180 days after 10 January is 9 July: not reached, so absent.
        #expect(january.map(\.0) == [30, 30, 90, 90], "\(january)")
        #expect(january[0] == (30, "EUR", 2, 9_990_000, 4_995_000) && january[1] == (30, "USD", 2, 4_990_000, 2_495_000))
        // By 90 days alice's renewal was refunded: still 4.99 (the May renewal is past 10 April).
        #expect(january[3] == (90, "USD", 2, 4_990_000, 2_495_000))
        let february = try #require(report.cohorts.last?.values.first { $0.days == 90 })
        #expect(february.grossMicros == 2_990_000 && february.proceedsMicros == 2_093_000 && february.proceedsPerCustomerMicros == 2_093_000)
        #expect(report.cohorts.allSatisfy { $0.reportingValues == nil } && report.missingRates == nil)

        // In USD, January's euros at 1.10: 9.99 EUR is 10.989 USD.
        let dollars = LifetimeValueReport.build(
            Self.ledger, from: Self.date("2026-01-01"), to: now, now: now,
            reporting: ReportingCurrency(currency: "USD", rates: ["2026-01": ["EUR": "1.10"]]))
        let reported = try #require(dollars.cohorts.first?.reportingValues?.first { $0.days == 30 })
        #expect(reported.currency == "USD" && reported.grossMicros == 15_979_000 && reported.grossPerCustomerMicros == 7_989_500, "\(reported)")
        #expect(dollars.cohorts.first?.reportingValues?.count == 2 && dollars.missingRates == nil)
        let unrated = LifetimeValueReport.build(
            Self.ledger, from: Self.date("2026-01-01"), to: now, now: now, reporting: ReportingCurrency(currency: "USD"))
        #expect(unrated.missingRates == ["2026-01 EUR"])
        // A range holding February only; an empty ledger.
        #expect(LifetimeValueReport.build(Self.ledger, from: Self.date("2026-02-01"), to: now, now: now).cohorts.map(\.month) == ["2026-02"])
        #expect(LifetimeValueReport.build([], from: .distantPast, to: now, now: now).cohorts.isEmpty)
    }
}
