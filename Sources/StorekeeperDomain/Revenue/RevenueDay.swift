public import Foundation

/// One day's ledger rows of one currency and event, summed: what a store keeps beside the ledger
/// (in the row's transaction) so revenue reads days, not rows. The day is the UTC midnight before
/// the transaction's purchase date, as every row counts in its purchase's period.
public struct RevenueDay: Sendable, Hashable {
    public var day: Date
    public var currency: String
    public var event: LedgerEntry.Event
    public var count: Int64
    public var amountMicros: Int64
    public var proceedsMicros: Int64
    /// Of the amount, what was booked at the list price (`estimated` rows).
    public var estimatedMicros: Int64

    public init(
        day: Date, currency: String, event: LedgerEntry.Event, count: Int64, amountMicros: Int64, proceedsMicros: Int64,
        estimatedMicros: Int64
    ) {
        self.day = day
        self.currency = currency
        self.event = event
        self.count = count
        self.amountMicros = amountMicros
        self.proceedsMicros = proceedsMicros
        self.estimatedMicros = estimatedMicros
    }

    /// A ledger row's share, or nil for a row that is not money: no amount (a family member's
    /// copy, a list price unknown) or beyond `MetricContribution.largestAmount` (an absurd signed
    /// price, whose sums could overflow).
    public init?(_ entry: LedgerEntry) {
        guard let amount = entry.priceMicros, let currency = entry.currency else { return nil }
        let proceeds = entry.proceedsMicros ?? 0
        let limit = MetricContribution.largestAmount.magnitude
        guard amount.magnitude <= limit, proceeds.magnitude <= limit else { return nil }
        self.init(
            day: ReportInterval.day.start(of: entry.purchaseDate), currency: currency, event: entry.event, count: 1, amountMicros: amount,
            proceedsMicros: proceeds, estimatedMicros: entry.estimated ? amount : 0)
    }

    /// Rows summed by day, currency and event.
    public static func grouping(_ entries: [LedgerEntry]) -> [RevenueDay] {
        var sums: [RevenueDay: RevenueDay] = [:]
        for entry in entries {
            guard let share = RevenueDay(entry) else { continue }
            var key = share
            (key.count, key.amountMicros, key.proceedsMicros, key.estimatedMicros) = (0, 0, 0, 0)
            sums[key, default: key].add(share)
        }
        return sums.values.sorted(by: order)
    }

    public mutating func add(_ other: RevenueDay) {
        count += other.count
        amountMicros = amountMicros.addingReportingOverflow(other.amountMicros).partialValue
        proceedsMicros = proceedsMicros.addingReportingOverflow(other.proceedsMicros).partialValue
        estimatedMicros = estimatedMicros.addingReportingOverflow(other.estimatedMicros).partialValue
    }

    static func order(_ a: RevenueDay, _ b: RevenueDay) -> Bool {
        (a.day, a.currency, a.event.rawValue) < (b.day, b.currency, b.event.rawValue)
    }
}
