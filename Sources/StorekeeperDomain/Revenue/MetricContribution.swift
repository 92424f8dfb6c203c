public import Foundation

/// What one subscription, or one consumable purchase, adds to its app's figures
/// (docs/ANALYTICS.md, "How the figures are kept"). A store keeps these in the same transaction as
/// the grant that changed them, and day totals beside them, so a figure reads a few hundred totals
/// instead of the app's whole history. Two sorts:
/// - a *step* (`paying`, `trial`, `mrr`, `mrrSubscriptions`, `retry`, `grace`) is +x where a state
///   begins and −x where it ends, so the state at an instant is the sum of the steps at or before it;
///   it counts in the day total of the first midnight at or after its instant;
/// - an *event* is counted in the period holding its instant, in the day total of the midnight
///   before it.
/// Built from the same `SubscriptionTimeline` the full computation reads, so both say the same.
public struct MetricContribution: Hashable, Sendable {
    public struct Kind: RawRepresentable, Hashable, Sendable, Comparable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// Paid access (grace included), ±1.
        public static let paying = Kind(rawValue: "paying")
        /// A free trial's access, ±1.
        public static let trial = Kind(rawValue: "trial")
        /// Monthly recurring revenue of a paying subscription, ± micros; `key` is the currency.
        public static let mrr = Kind(rawValue: "mrr")
        /// Paying subscriptions with a known monthly amount, ±1; `key` is the currency (a currency
        /// is in MRR while one counts, even at zero).
        public static let mrrSubscriptions = Kind(rawValue: "mrr_subscriptions")
        /// Apple still trying to bill, without access, ±1.
        public static let retry = Kind(rawValue: "retry")
        /// In Apple's billing grace period, ±1.
        public static let grace = Kind(rawValue: "grace")
        /// The first paid period began.
        public static let firstPaid = Kind(rawValue: "first_paid")
        public static let trialStarted = Kind(rawValue: "trial_started")
        /// At the trial's start: it converted within `SubscriptionMetrics.conversionWindow`.
        public static let trialConverted = Kind(rawValue: "trial_converted")
        /// A trial not converted: `at` is its deadline, `since` its start (read while the deadline is ahead).
        public static let trialOpen = Kind(rawValue: "trial_open")
        /// Paid access ended: `since` is when that run began, `until` when the next began (nil: none yet).
        /// Read for the period under way, whose churn is measured at now.
        public static let paidEnd = Kind(rawValue: "paid_end")
        /// Churn in a whole period: paying at its start, not at its end; `at` is the period's start.
        public static let churnDay = Kind(rawValue: "churn_day")
        public static let churnWeek = Kind(rawValue: "churn_week")
        public static let churnMonth = Kind(rawValue: "churn_month")
        /// Credits of a consumable bought, and of one bought and refunded, at its purchase.
        public static let creditsSold = Kind(rawValue: "credits_sold")
        public static let creditsRefunded = Kind(rawValue: "credits_refunded")
        /// A product whose billing period is unknown (`key`), at its purchase.
        public static let unknownPeriod = Kind(rawValue: "unknown_period")

        public static let steps: [Kind] = [.paying, .trial, .mrr, .mrrSubscriptions, .retry, .grace]

        public var isStep: Bool { Self.steps.contains(self) }

        public static func churn(_ interval: ReportInterval) -> Kind {
            switch interval {
            case .day: .churnDay
            case .week: .churnWeek
            case .month: .churnMonth
            }
        }

        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    public var kind: Kind
    /// The currency for `mrr`, the product for `unknownPeriod`; empty otherwise.
    public var key: String
    public var at: Date
    public var amount: Int64
    public var since: Date?
    public var until: Date?

    public init(kind: Kind, key: String = "", at: Date, amount: Int64 = 1, since: Date? = nil, until: Date? = nil) {
        self.kind = kind
        self.key = key
        self.at = at
        self.amount = amount
        self.since = since
        self.until = until
    }

    /// The midnight (UTC) of the day total this counts in.
    public var day: Date {
        let calendar = RevenueReport.calendar
        let midnight = calendar.startOfDay(for: at)
        guard kind.isStep, midnight < at else { return midnight }
        return calendar.date(byAdding: .day, value: 1, to: midnight) ?? midnight
    }

    /// The largest monthly amount counted (a billion units): beyond it a signed price is absurd,
    /// and sums of such amounts could overflow a store's 64-bit totals.
    public static let largestAmount: Int64 = 1_000_000_000_000_000

    /// Where a consumable's contributions are kept (a subscription's are under its original transaction id).
    public static func source(consumable transactionId: String) -> String { "tx:" + transactionId }

    /// A subscription's contributions, from every transaction of one original transaction (any
    /// order; a Family Sharing member's copy adds nothing) and its facts as last told.
    public static func subscription(
        _ records: [TransactionRecord], facts: SubscriptionFacts?, catalog: [String: Product]
    ) -> [MetricContribution] {
        let (timelines, unknown) = SubscriptionTimeline.build(records, facts: facts.map { [$0] } ?? [], catalog: catalog)
        var result: [MetricContribution] = unknown.compactMap { product in
            records.filter { $0.productId == product }.map(\.purchaseDate).min().map {
                MetricContribution(kind: .unknownPeriod, key: product, at: $0)
            }
        }
        guard let timeline = timelines.first else { return result }
        result += steps(timeline)
        if let firstPaid = timeline.periods.first(where: { !$0.isTrial }) {
            result.append(MetricContribution(kind: .firstPaid, at: firstPaid.start))
        }
        for trial in timeline.periods where trial.isTrial {
            result.append(MetricContribution(kind: .trialStarted, at: trial.start))
            let deadline = trial.end.addingTimeInterval(SubscriptionMetrics.conversionWindow)
            if timeline.periods.contains(where: { !$0.isTrial && $0.start >= trial.start && $0.start <= deadline }) {
                result.append(MetricContribution(kind: .trialConverted, at: trial.start))
            } else {
                result.append(MetricContribution(kind: .trialOpen, at: deadline, since: trial.start))
            }
        }
        return result
    }

    /// A consumable purchase's credits (none for a Family Sharing member's copy).
    public static func consumable(_ record: TransactionRecord) -> [MetricContribution] {
        guard record.productType == .consumable, record.ownershipType != LedgerRule.familyShared, record.credits != 0 else { return [] }
        var result = [MetricContribution(kind: .creditsSold, at: record.purchaseDate, amount: Int64(record.credits))]
        if record.isRevoked {
            result.append(MetricContribution(kind: .creditsRefunded, at: record.purchaseDate, amount: Int64(record.credits)))
        }
        return result
    }

    private struct State: Equatable {
        var paying = false
        var trial = false
        var mrr: SubscriptionMetrics.Amount?
        var retry = false
        var grace = false
    }

    /// The timeline's states swept over every instant one may change at, with the runs of paid
    /// access and the periods each run's end churns in.
    private static func steps(_ timeline: SubscriptionTimeline) -> [MetricContribution] {
        guard let first = timeline.periods.first, let last = timeline.periods.last else { return [] }
        var instants = Set(timeline.periods.flatMap { [$0.start, $0.end] })
        if let graceEnd = timeline.graceEnd { instants.insert(graceEnd) }
        var result: [MetricContribution] = []
        var previous = State()
        var runs: [(start: Date, end: Date?)] = []
        for instant in instants.sorted() where instant >= first.start {
            let period = timeline.period(at: instant)
            var state = State()
            state.paying = period.map { !$0.isTrial } ?? false
            state.trial = period?.isTrial ?? false
            if state.paying, let period, let micros = period.monthlyMicros, let currency = period.currency,
                micros.magnitude <= largestAmount.magnitude
            {
                state.mrr = SubscriptionMetrics.Amount(currency: currency, micros: micros)
            }
            state.retry = timeline.inBillingRetry && period == nil
            if let graceEnd = timeline.graceEnd { state.grace = last.end <= instant && instant < graceEnd }
            guard state != previous else { continue }
            func flip(_ kind: Kind, _ before: Bool, _ after: Bool) {
                if before != after { result.append(MetricContribution(kind: kind, at: instant, amount: after ? 1 : -1)) }
            }
            flip(.paying, previous.paying, state.paying)
            flip(.trial, previous.trial, state.trial)
            flip(.retry, previous.retry, state.retry)
            flip(.grace, previous.grace, state.grace)
            if previous.mrr != state.mrr {
                if let old = previous.mrr {
                    result.append(MetricContribution(kind: .mrr, key: old.currency, at: instant, amount: -old.micros))
                    result.append(MetricContribution(kind: .mrrSubscriptions, key: old.currency, at: instant, amount: -1))
                }
                if let new = state.mrr {
                    result.append(MetricContribution(kind: .mrr, key: new.currency, at: instant, amount: new.micros))
                    result.append(MetricContribution(kind: .mrrSubscriptions, key: new.currency, at: instant, amount: 1))
                }
            }
            if !previous.paying, state.paying { runs.append((instant, nil)) }
            if previous.paying, !state.paying { runs[runs.count - 1].end = instant }
            previous = state
        }
        var churned: Set<MetricContribution> = []
        for (index, run) in runs.enumerated() {
            guard let end = run.end else { continue }
            let next = index + 1 < runs.count ? runs[index + 1].start : nil
            result.append(MetricContribution(kind: .paidEnd, at: end, since: run.start, until: next))
            for interval in ReportInterval.allCases {
                // The period this end falls in, as (start, end]: paying at its start and not at its end.
                let start = interval.start(of: end.addingTimeInterval(-0.001))
                if timeline.isPaying(at: start), !timeline.isPaying(at: interval.next(after: start)) {
                    churned.insert(MetricContribution(kind: .churn(interval), at: start))
                }
            }
        }
        return result + churned.sorted { ($0.kind, $0.at) < ($1.kind, $1.at) }
    }
}
