public import Foundation
public import StorekeeperDomain

/// The overview of one app: the figures now, two charts and the tables by period, built from the
/// same reports as `GET /v1/admin/apps/{app}/metrics/*` (the figures are the API's).
public struct OverviewPage: Sendable, Hashable {
    public struct Amount: Sendable, Hashable {
        public var currency: String
        /// Exact, for a reader (or a test) that compares with the API.
        public var micros: String
        public var amount: String
    }

    public struct RevenueRow: Sendable, Hashable {
        public var period: String
        public var currency: String
        public var sales: Int
        public var gross: String
        public var refunds: String
        public var net: String
        public var netMicros: String
        public var proceeds: String
    }

    public struct PeriodRow: Sendable, Hashable {
        public var period: String
        public var activeAtStart: Int
        public var activeAtClose: Int
        public var newSubscriptions: Int
        public var trialsStarted: Int
        public var trialsConverted: Int
        public var churned: Int
        public var creditsSold: Int
    }

    public var environments: [ConsoleChoice]
    public var intervals: [ConsoleChoice]
    public var interval: String
    public var from: String
    public var to: String
    public var active: Int
    public var trials: Int
    public var billingRetry: Int
    public var grace: Int
    public var mrr: [Amount]
    public var activeChart: ConsoleChart
    public var revenueChart: ConsoleChart
    public var revenue: [RevenueRow]
    public var periods: [PeriodRow]

    /// `metrics` and `revenue` over the same range and interval; the revenue chart is drawn in the
    /// reporting currency when the app has one, else in the first currency sold, every period of
    /// the range shown (those without sales at zero, as in the other chart).
    public init(
        metrics: SubscriptionMetrics, revenue report: RevenueReport, environment: String, interval: ReportInterval, from: Date, to: Date
    ) {
        environments = ConsoleChoice.options(["production", "sandbox"], selected: environment)
        intervals = ConsoleChoice.options(ReportInterval.allCases.map(\.rawValue), selected: interval.rawValue)
        self.interval = interval.rawValue
        self.from = ConsoleFormat.day(from)
        self.to = ConsoleFormat.day(to)
        let snapshot = metrics.current.snapshot
        active = snapshot.activeSubscriptions
        trials = snapshot.activeTrials
        billingRetry = metrics.current.inBillingRetry
        grace = metrics.current.inGracePeriod
        mrr = snapshot.mrr.map { Amount(currency: $0.currency, micros: "\($0.micros)", amount: ConsoleFormat.money($0.micros)) }
        activeChart = ConsoleChart(
            title: "Paying subscriptions at each \(interval.rawValue)'s close",
            values: metrics.periods.map {
                (
                    label: ConsoleFormat.label($0.start, interval), value: Int64($0.closing.activeSubscriptions),
                    text: "\($0.closing.activeSubscriptions)"
                )
            })
        let chartCurrency = report.reporting?.currency ?? report.totals.first?.currency
        let byStart = Dictionary(report.periods.map { ($0.start, $0) }, uniquingKeysWith: { first, _ in first })
        revenueChart = ConsoleChart(
            title: "Net revenue by \(interval.rawValue) in \(chartCurrency ?? "—")",
            values: metrics.periods.map { period in
                let figures = byStart[period.start].flatMap { $0.reporting ?? $0.currencies.first { $0.currency == chartCurrency } }
                let net = figures?.netMicros ?? 0
                return (label: ConsoleFormat.label(period.start, interval), value: net, text: ConsoleFormat.money(net))
            })
        revenue = report.periods.flatMap { period in
            period.currencies.map { figures in
                RevenueRow(
                    period: ConsoleFormat.day(period.start), currency: figures.currency, sales: figures.sales,
                    gross: ConsoleFormat.money(figures.grossMicros), refunds: "\(figures.refunds) (\(ConsoleFormat.money(figures.refundsMicros)))",
                    net: ConsoleFormat.money(figures.netMicros), netMicros: "\(figures.netMicros)",
                    proceeds: ConsoleFormat.money(figures.proceedsMicros))
            }
        }
        periods = metrics.periods.map { period in
            PeriodRow(
                period: ConsoleFormat.day(period.start), activeAtStart: period.activeAtStart, activeAtClose: period.closing.activeSubscriptions,
                newSubscriptions: period.newSubscriptions, trialsStarted: period.trialsStarted, trialsConverted: period.trialsConverted,
                churned: period.churned, creditsSold: period.creditsSold)
        }
    }
}
