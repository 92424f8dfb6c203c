public import Foundation

/// Realized lifetime value by cohort (docs/ANALYTICS.md, "Lifetime value"): customers grouped by
/// the month (UTC) of their first paid purchase in the ledger, and what they had paid 30, 90,
/// 180 and 365 days after it, charged and earned (refunds taken back), per customer. Only
/// customers whose horizon has passed count toward it, so a young cohort's 365-day figure is
/// absent rather than low. Amounts stay in their currency, exact integer micro-units; with a
/// reporting currency each entry is also converted at its purchase month's rate. Pure: the
/// ledger and `now` are inputs.
public struct LifetimeValueReport: Codable, Sendable, Hashable {
    public struct Value: Codable, Sendable, Hashable {
        public var days: Int
        public var currency: String
        /// The cohort's customers whose first payment is at least `days` old (the denominator).
        public var customers: Int
        public var grossMicros: Int64
        public var proceedsMicros: Int64
        /// The sums ÷ `customers`, rounded toward zero.
        public var grossPerCustomerMicros: Int64
        public var proceedsPerCustomerMicros: Int64
    }

    public struct Cohort: Codable, Sendable, Hashable {
        /// `YYYY-MM`.
        public var month: String
        public var customers: Int
        public var values: [Value]
        /// `values` in the reporting currency; absent without one.
        public var reportingValues: [Value]?
    }

    public var cohorts: [Cohort]
    /// `YYYY-MM CUR` of the rates missing for the reporting currency (those entries are not in
    /// `reportingValues`).
    public var missingRates: [String]?
    /// The range asked for more than 1,000 months: the latest were kept.
    public var earlierCohortsOmitted: Bool?

    public static let horizons = [30, 90, 180, 365]

    /// Cohorts of the months holding `from` to the one before `to`, oldest first; `ledger`: the
    /// environment's entries up to `now`.
    public static func build(_ ledger: [LedgerEntry], from: Date, to: Date, now: Date, reporting: ReportingCurrency? = nil) -> LifetimeValueReport {
        var byCustomer: [String: [LedgerEntry]] = [:]
        // The caller's ledger ends at now; its instants are whole milliseconds, so one bought at
        // `now` may read up to half a millisecond after it and still belongs.
        for entry in ledger { byCustomer[entry.appUserId, default: []].append(entry) }
        // Each payer's first paid purchase, and the cohorts they fall in: months from the one
        // holding `from` to the one holding the last instant before `to` (as `CohortReport`).
        let (first, last) = (RevenueReport.month(of: from), RevenueReport.month(of: to.addingTimeInterval(-0.001)))
        var members: [String: [(start: Date, entries: [LedgerEntry])]] = [:]
        for (_, entries) in byCustomer {
            guard let start = entries.filter({ $0.event == .purchase && ($0.priceMicros ?? 0) > 0 }).map(\.purchaseDate).min() else { continue }
            let month = RevenueReport.month(of: start)
            guard month >= first, month <= last else { continue }
            members[month, default: []].append((start, entries))
        }
        var missing = Set<String>()
        let cohorts = members.keys.sorted().map { month in
            let customers = members[month] ?? []
            var cohort = Cohort(
                month: month, customers: customers.count, values: values(customers, now: now, amount: LedgerAmount.init), reportingValues: nil)
            if let reporting {
                cohort.reportingValues = values(customers, now: now) { entry in
                    let month = RevenueReport.month(of: entry.purchaseDate)
                    guard let native = LedgerAmount(entry) else { return nil }
                    guard let converted = native.converted(reporting, purchasedAt: month) else {
                        missing.insert("\(month) \(native.currency)")
                        return nil
                    }
                    return converted
                }
            }
            return cohort
        }
        return LifetimeValueReport(cohorts: cohorts, missingRates: missing.isEmpty ? nil : missing.sorted(), earlierCohortsOmitted: nil)
    }

    /// Per horizon reached by any of the customers, and per currency paid in by any of those.
    static func values(_ customers: [(start: Date, entries: [LedgerEntry])], now: Date, amount: (LedgerEntry) -> LedgerAmount?) -> [Value] {
        horizons.flatMap { days -> [Value] in
            let span = TimeInterval(days) * 86_400
            let reached = customers.filter { $0.start.addingTimeInterval(span) <= now }
            var sums: [String: (gross: Int64, proceeds: Int64)] = [:]
            for customer in reached {
                let end = customer.start.addingTimeInterval(span)
                for entry in customer.entries where entry.purchaseDate < end {
                    guard let money = amount(entry) else { continue }
                    let sum = sums[money.currency] ?? (0, 0)
                    sums[money.currency] = (sum.gross + money.gross, sum.proceeds + money.proceeds)
                }
            }
            let count = Int64(reached.count)
            return sums.keys.sorted().map { currency in
                let sum = sums[currency] ?? (0, 0)
                return Value(
                    days: days, currency: currency, customers: reached.count, grossMicros: sum.gross, proceedsMicros: sum.proceeds,
                    grossPerCustomerMicros: count > 0 ? sum.gross / count : 0, proceedsPerCustomerMicros: count > 0 ? sum.proceeds / count : 0)
            }
        }
    }
}
