public import Foundation

/// The length of a report's periods, each starting at midnight UTC: a day, an ISO week (from
/// Monday), a calendar month.
public enum ReportInterval: String, Codable, Sendable, Hashable, CaseIterable {
    case day, week, month

    /// The start of the period holding `date`.
    public func start(of date: Date) -> Date {
        let calendar = RevenueReport.calendar
        switch self {
        case .day:
            return calendar.startOfDay(for: date)
        case .week:
            let day = calendar.startOfDay(for: date)
            // Gregorian weekday: 1 is Sunday; ISO weeks start on Monday.
            let back = (calendar.component(.weekday, from: day) + 5) % 7
            return calendar.date(byAdding: .day, value: -back, to: day) ?? day
        case .month:
            return calendar.date(from: calendar.dateComponents([.year, .month], from: date)) ?? date
        }
    }
}

/// Revenue by period from the ledger (docs/ANALYTICS.md): per currency, the sales and their
/// gross, the refunds (less refunds Apple reversed), the net and the estimated proceeds; and,
/// when the app has a reporting currency, the same in it at the operator's monthly rates.
/// Every row counts in the period of its transaction's purchase date, so a period's net is what
/// its sales finally brought. Rows without an amount (a family member's copy) are not money and
/// are left out. Pure: the rows are the input.
public struct RevenueReport: Codable, Sendable, Hashable {
    public struct Figures: Codable, Sendable, Hashable {
        public var currency: String
        public var sales = 0
        public var grossMicros: Int64 = 0
        /// Refunds less reversals: a count and an amount (negative).
        public var refunds = 0
        public var refundsMicros: Int64 = 0
        public var netMicros: Int64 = 0
        public var proceedsMicros: Int64 = 0
        /// Of the gross, what was booked at the list price (`estimated` rows).
        public var estimatedMicros: Int64 = 0
        /// refunds ÷ sales (counts, after reversals); nil without sales.
        public var refundRate: Double?

        public init(currency: String) { self.currency = currency }

        mutating func add(_ day: RevenueDay, amount: Int64, proceeds: Int64, estimated: Int64) {
            let count = Int(day.count)
            switch day.event {
            case .purchase:
                sales += count
                grossMicros = grossMicros.addingReportingOverflow(amount).partialValue
                estimatedMicros = estimatedMicros.addingReportingOverflow(estimated).partialValue
            case .refund:
                refunds += count
                refundsMicros = refundsMicros.addingReportingOverflow(amount).partialValue
            case .refundReversed:
                refunds -= count
                refundsMicros = refundsMicros.addingReportingOverflow(amount).partialValue
            }
            netMicros = netMicros.addingReportingOverflow(amount).partialValue
            proceedsMicros = proceedsMicros.addingReportingOverflow(proceeds).partialValue
            refundRate = SubscriptionMetrics.ratio(refunds, sales)
        }
    }

    public struct Period: Codable, Sendable, Hashable {
        public var start: Date
        /// By currency code, in code order.
        public var currencies: [Figures]
        /// In the reporting currency, when the app has one.
        public var reporting: Figures?
        /// `YYYY-MM CUR` of the rates missing for this period: those rows are not in `reporting`.
        public var missingRates: [String]?
    }

    public var interval: ReportInterval
    public var periods: [Period]
    public var totals: [Figures]
    public var reporting: Figures?
    public var missingRates: [String]?

    public static func build(_ entries: [LedgerEntry], interval: ReportInterval, reporting: ReportingCurrency? = nil) -> RevenueReport {
        build(days: RevenueDay.grouping(entries), interval: interval, reporting: reporting)
    }

    /// From day totals (a store keeps them with each ledger row): each day's total per currency
    /// and event is converted to the reporting currency at its month's rate.
    public static func build(days: [RevenueDay], interval: ReportInterval, reporting: ReportingCurrency? = nil) -> RevenueReport {
        var byPeriod: [Date: [String: Figures]] = [:]
        var reported: [Date: Figures] = [:]
        var missing: [Date: Set<String>] = [:]
        var totals: [String: Figures] = [:]
        var reportingTotal = reporting.map { Figures(currency: $0.currency) }
        for day in days.sorted(by: RevenueDay.order) {
            let currency = day.currency
            let start = interval.start(of: day.day)
            byPeriod[start, default: [:]][currency, default: Figures(currency: currency)].add(
                day, amount: day.amountMicros, proceeds: day.proceedsMicros, estimated: day.estimatedMicros)
            totals[currency, default: Figures(currency: currency)].add(
                day, amount: day.amountMicros, proceeds: day.proceedsMicros, estimated: day.estimatedMicros)
            guard let reporting else { continue }
            let month = Self.month(of: day.day)
            if let converted = reporting.convert(day.amountMicros, from: currency, month: month),
                let convertedProceeds = reporting.convert(day.proceedsMicros, from: currency, month: month),
                let convertedEstimate = reporting.convert(day.estimatedMicros, from: currency, month: month)
            {
                reported[start, default: Figures(currency: reporting.currency)].add(
                    day, amount: converted, proceeds: convertedProceeds, estimated: convertedEstimate)
                reportingTotal?.add(day, amount: converted, proceeds: convertedProceeds, estimated: convertedEstimate)
            } else {
                missing[start, default: []].insert("\(month) \(currency)")
            }
        }
        let periods = byPeriod.keys.sorted().map { start in
            Period(
                start: start, currencies: byPeriod[start, default: [:]].values.sorted { $0.currency < $1.currency },
                reporting: reporting.map { reported[start] ?? Figures(currency: $0.currency) },
                missingRates: missing[start].map { $0.sorted() })
        }
        let allMissing = Set(missing.values.flatMap { $0 })
        return RevenueReport(
            interval: interval, periods: periods, totals: totals.values.sorted { $0.currency < $1.currency }, reporting: reportingTotal,
            missingRates: allMissing.isEmpty ? nil : allMissing.sorted())
    }

    /// `YYYY-MM` of `date` in UTC: the month whose rate applies.
    public static func month(of date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month], from: date)
        let month = parts.month ?? 1
        return "\(parts.year ?? 1970)-\(month < 10 ? "0" : "")\(month)"
    }

    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
