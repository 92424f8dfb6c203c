import Foundation
import StorekeeperDomain
import Testing

/// The revenue report's definitions at fixed values: the worked example of docs/ANALYTICS.md.
@Suite("revenue report: periods, currencies, refunds and the reporting currency")
struct RevenueReportTests {
    /// 2026-11-30 (a Monday) 10:00 UTC, and the days around it.
    let monday = Date(timeIntervalSince1970: 1_796_032_800)
    var sunday: Date { monday.addingTimeInterval(-86_400) }
    var december: Date { monday.addingTimeInterval(2 * 86_400) }

    func row(
        _ id: String, _ event: LedgerEntry.Event, _ micros: Int64?, _ currency: String, at date: Date, proceeds: Int64? = nil,
        estimated: Bool = false
    ) -> LedgerEntry {
        var entry = LedgerEntry(
            appId: "app", appUserId: "u", productId: "p", productType: .consumable, transactionId: id, originalTransactionId: id,
            environment: "production", purchaseDate: date, event: event, quantity: 1, priceMicros: micros, currency: currency,
            state: "granted", recordedAt: date)
        entry.proceedsMicros = proceeds
        entry.estimated = estimated
        return entry
    }

    var rows: [LedgerEntry] {
        [
            row("1", .purchase, 4_990_000, "USD", at: sunday, proceeds: 3_493_000),
            row("2", .purchase, 5_490_000, "EUR", at: monday, proceeds: 3_843_000),
            row("2", .refund, -5_490_000, "EUR", at: monday, proceeds: -3_843_000),
            row("2", .refundReversed, 5_490_000, "EUR", at: monday, proceeds: 3_843_000),
            row("3", .purchase, 990_000, "USD", at: december, proceeds: 693_000, estimated: true),
            row("3", .refund, -247_500, "USD", at: december, proceeds: -173_250),
            // A family member's copy: no amount, not money.
            row("4", .purchase, nil, "USD", at: december),
        ]
    }

    @Test("by month: November holds the Sunday and the Monday, December the rest; a reversal undoes its refund")
    func monthly() {
        let report = RevenueReport.build(rows, interval: .month)
        #expect(report.periods.map { RevenueReport.month(of: $0.start) } == ["2026-11", "2026-12"])
        let november = report.periods[0].currencies
        #expect(november.map(\.currency) == ["EUR", "USD"])
        #expect(november[0].sales == 1 && november[0].grossMicros == 5_490_000 && november[0].refunds == 0 && november[0].netMicros == 5_490_000)
        #expect(november[0].proceedsMicros == 3_843_000)
        let december = report.periods[1].currencies
        #expect(december.map(\.currency) == ["USD"])
        #expect(december[0].sales == 1 && december[0].refunds == 1 && december[0].refundsMicros == -247_500)
        #expect(december[0].netMicros == 742_500 && december[0].proceedsMicros == 519_750 && december[0].estimatedMicros == 990_000)
        #expect(report.totals.first { $0.currency == "USD" }?.grossMicros == 5_980_000)
        #expect(report.reporting == nil && report.periods.allSatisfy { $0.reporting == nil })
    }

    @Test("by ISO week: Sunday closes one week, Monday opens the next; by day: three days")
    func weeksAndDays() {
        let weekly = RevenueReport.build(rows, interval: .week)
        #expect(weekly.periods.count == 2)
        #expect(weekly.periods[1].start == Date(timeIntervalSince1970: 1_795_996_800), "Monday 2026-11-30 00:00 UTC")
        #expect(weekly.periods[1].currencies.map(\.currency) == ["EUR", "USD"])
        #expect(RevenueReport.build(rows, interval: .day).periods.count == 3)
    }

    @Test("in one reporting currency at the month's rate, exactly; a month without a rate is named and left out")
    func reporting() {
        let usd = ReportingCurrency(currency: "USD", rates: ["2026-11": ["EUR": "1.0850"]])
        let report = RevenueReport.build(rows, interval: .month, reporting: usd)
        // 5.49 EUR × 1.085 = 5.95665 USD; plus 4.99 USD.
        #expect(report.periods[0].reporting?.grossMicros == 10_946_650)
        #expect(report.periods[0].reporting?.currency == "USD" && report.periods[0].missingRates == nil)
        let euros = ReportingCurrency(currency: "EUR", rates: ["2026-11": ["USD": "0.9216"]])
        let inEuros = RevenueReport.build(rows, interval: .month, reporting: euros)
        // 5.49 EUR, plus 4.99 USD × 0.9216 = 4.598784 EUR.
        let gross: Int64 = 10_088_784
        #expect(inEuros.periods[0].reporting?.grossMicros == gross)
        #expect(inEuros.periods[1].missingRates == ["2026-12 USD"] && inEuros.missingRates == ["2026-12 USD"])
        #expect(inEuros.periods[1].reporting?.sales == 0)
    }

    @Test("rates: decimals of at most six places, positive, as strings; rounding half away from zero")
    func rates() {
        #expect(ReportingCurrency.millionths("1.0850") == 1_085_000 && ReportingCurrency.millionths("2") == 2_000_000)
        for bad in ["", "0", "0.0", "-1", "1.", ".5", "1.1234567", "1e3", "١.٢", "nan"] {
            #expect(ReportingCurrency.millionths(bad) == nil, "\(bad)")
        }
        let table = ReportingCurrency(currency: "USD", rates: ["2026-11": ["EUR": "1.5"]])
        #expect(table.convert(1, from: "EUR", month: "2026-11") == 2 && table.convert(-1, from: "EUR", month: "2026-11") == -2)
        #expect(table.convert(.max, from: "EUR", month: "2026-11") == nil, "too large is unknown, never a trap")
        #expect(
            ReportingCurrency(currency: "usd", rates: ["2026-13": ["EU": "x"]]).problems(prefix: "apps[0].reporting").count == 4)
    }
}
