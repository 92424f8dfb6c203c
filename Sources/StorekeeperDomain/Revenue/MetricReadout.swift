public import Foundation

/// What a store reads to answer the subscription figures from kept totals
/// (`MetricContribution`): the day totals of the whole history, and the few contributions that
/// depend on where now falls. Its size grows with the days of history, not with the customers.
public struct MetricReadout: Sendable, Hashable {
    /// The sum of one kind's contributions counted in one day.
    public struct DayTotal: Sendable, Hashable {
        public var kind: MetricContribution.Kind
        public var key: String
        public var day: Date
        public var amount: Int64

        public init(kind: MetricContribution.Kind, key: String, day: Date, amount: Int64) {
            self.kind = kind
            self.key = key
            self.day = day
            self.amount = amount
        }
    }

    /// A contribution with the subscription (or purchase) it belongs to.
    public struct Sourced: Sendable, Hashable {
        public var source: String
        public var contribution: MetricContribution

        public init(source: String, contribution: MetricContribution) {
            self.source = source
            self.contribution = contribution
        }
    }

    public var days: [DayTotal]
    /// Steps after `now`'s midnight and at or before `now`.
    public var today: [MetricContribution]
    /// `trialOpen` whose deadline is after `now`.
    public var openTrials: [MetricContribution]
    /// `paidEnd` after the start of the period under way and at or before `now`.
    public var recentEnds: [Sourced]

    public init(days: [DayTotal], today: [MetricContribution], openTrials: [MetricContribution], recentEnds: [Sourced]) {
        self.days = days
        self.today = today
        self.openTrials = openTrials
        self.recentEnds = recentEnds
    }

    /// What a store reads, here from contributions in memory: the definition the stores' queries
    /// follow (their conformance tests compare with it).
    public static func reading(
        _ contributions: [Sourced], now: Date, interval: ReportInterval
    ) -> MetricReadout {
        var totals: [DayTotal: Int64] = [:]
        for item in contributions {
            let c = item.contribution
            totals[DayTotal(kind: c.kind, key: c.key, day: c.day, amount: 0), default: 0] += c.amount
        }
        let midnight = ReportInterval.day.start(of: now)
        let periodStart = interval.start(of: now)
        let all = contributions.map(\.contribution)
        return MetricReadout(
            days: totals.map { DayTotal(kind: $0.key.kind, key: $0.key.key, day: $0.key.day, amount: $0.value) },
            today: all.filter { $0.kind.isStep && midnight < $0.at && $0.at <= now },
            openTrials: all.filter { $0.kind == .trialOpen && $0.at > now },
            recentEnds: contributions.filter { $0.contribution.kind == .paidEnd && periodStart < $0.contribution.at && $0.contribution.at <= now })
    }
}

/// Running sums over a readout's day totals.
struct MetricSums {
    private var cumulative: [String: [(day: Date, sum: Int64)]] = [:]
    /// Today's steps by kind and key, oldest first, summed as they go.
    private var today: [String: [(at: Date, sum: Int64)]] = [:]
    private let readout: MetricReadout

    init(_ readout: MetricReadout) {
        self.readout = readout
        var grouped: [String: [MetricReadout.DayTotal]] = [:]
        for total in readout.days { grouped[Self.name(total.kind, total.key), default: []].append(total) }
        for (name, totals) in grouped {
            var sum: Int64 = 0
            cumulative[name] = totals.sorted { $0.day < $1.day }.map { total in
                sum = sum.addingReportingOverflow(total.amount).partialValue
                return (total.day, sum)
            }
        }
        for (name, steps) in Dictionary(grouping: readout.today, by: { Self.name($0.kind, $0.key) }) {
            var sum: Int64 = 0
            today[name] = steps.sorted { $0.at < $1.at }.map { step in
                sum = sum.addingReportingOverflow(step.amount).partialValue
                return (step.at, sum)
            }
        }
    }

    /// The last running sum at or before `bound` in a list ordered by its instants; 0 before the first.
    private static func last(_ sums: [(Date, Int64)], atOrBefore bound: Date) -> Int64 {
        var low = 0
        var high = sums.count
        while low < high {
            let middle = (low + high) / 2
            if sums[middle].0 <= bound { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? 0 : sums[low - 1].1
    }

    static func name(_ kind: MetricContribution.Kind, _ key: String) -> String { kind.rawValue + "\u{0}" + key }

    /// The sum of the day totals up to and including `day`.
    func through(_ kind: MetricContribution.Kind, _ key: String = "", day: Date) -> Int64 {
        Self.last(cumulative[Self.name(kind, key)] ?? [], atOrBefore: day)
    }

    /// A step's state at `instant`: midnights from the totals; `now` adds today's steps.
    func state(_ kind: MetricContribution.Kind, _ key: String = "", at instant: Date) -> Int64 {
        let midnight = ReportInterval.day.start(of: instant)
        let value = through(kind, key, day: midnight)
        guard midnight < instant else { return value }
        return value + Self.last(today[Self.name(kind, key)] ?? [], atOrBefore: instant)
    }

    /// Events counted in [start, end) (both midnights).
    func events(_ kind: MetricContribution.Kind, _ key: String = "", from start: Date, to end: Date) -> Int64 {
        through(kind, key, day: end.addingTimeInterval(-0.001)) - through(kind, key, day: start.addingTimeInterval(-0.001))
    }

    /// The keys (currencies, products) a kind has totals for.
    func keys(_ kind: MetricContribution.Kind) -> [String] {
        Set(readout.days.filter { $0.kind == kind }.map(\.key) + readout.today.filter { $0.kind == kind }.map(\.key)).sorted()
    }
}
