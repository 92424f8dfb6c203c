public import Foundation

/// Subscription figures by period (docs/ANALYTICS.md, each definition written there): active
/// subscriptions and trials, MRR, new subscriptions, trials started and converted, churn, credits
/// sold; and now, billing retry and grace. Built from `SubscriptionTimeline`s and the app's
/// transactions, so both backends give the same figures. Pure: `now` is an input.
public struct SubscriptionMetrics: Codable, Sendable, Hashable {
    /// A trial converts when a paid period of the same subscription begins within this long of the
    /// trial's end: Apple retries a failed first payment for up to 60 days.
    public static let conversionWindow: TimeInterval = 60 * 86_400
    /// At most this many periods in one answer.
    public static let maximumPeriods = 1_000

    public struct Amount: Codable, Sendable, Hashable {
        public var currency: String
        public var micros: Int64

        public init(currency: String, micros: Int64) {
            self.currency = currency
            self.micros = micros
        }
    }

    /// The state at one instant.
    public struct Snapshot: Codable, Sendable, Hashable {
        public var at: Date
        /// Subscriptions with paid access (a grace period included), trials excluded.
        public var activeSubscriptions = 0
        public var activeTrials = 0
        /// Monthly recurring revenue of the active subscriptions, per currency, in code order.
        public var mrr: [Amount] = []
        /// The same in the reporting currency at the rate of `at`'s month, when the app has one.
        public var mrrReporting: Amount?
        /// `YYYY-MM CUR` of rates missing for `mrrReporting` (those subscriptions are left out of it).
        public var missingRates: [String]?
    }

    public struct Period: Codable, Sendable, Hashable {
        public var start: Date
        public var end: Date
        /// Paid subscriptions active at `start`.
        public var activeAtStart: Int
        /// At `end`, or now for the period under way.
        public var closing: Snapshot
        /// Subscriptions whose first paid period began in this period.
        public var newSubscriptions = 0
        public var trialsStarted = 0
        /// Of the trials started: converted within `conversionWindow`, and not yet decided.
        public var trialsConverted = 0
        public var trialsPending = 0
        /// converted ÷ (started − pending); nil when none is decided.
        public var trialConversionRate: Double?
        /// Of the subscriptions paying at `start`, those without paid access at the closing instant.
        public var churned = 0
        /// churned ÷ activeAtStart; nil when none was active.
        public var churnRate: Double?
        /// Credits added by consumables bought in this period (refunded ones included) and the
        /// credits of those refunded since.
        public var creditsSold = 0
        public var creditsRefunded = 0
    }

    public struct Current: Codable, Sendable, Hashable {
        public var snapshot: Snapshot
        /// Subscriptions Apple is still trying to bill (no access), and those in a grace period (access).
        public var inBillingRetry: Int
        public var inGracePeriod: Int
    }

    public var interval: ReportInterval
    public var periods: [Period]
    public var current: Current
    /// Products whose billing period is unknown (no catalog `duration`, dates no help): their
    /// subscriptions count as active but are left out of MRR.
    public var unknownPeriods: [String]?
    /// The range asked for more than `maximumPeriods`: the latest were kept.
    public var earlierPeriodsOmitted: Bool?

    public static func build(
        transactions: [TransactionRecord], facts: [SubscriptionFacts], catalog: [String: Product], interval: ReportInterval,
        from: Date, to: Date, now: Date, reporting: ReportingCurrency? = nil
    ) -> SubscriptionMetrics {
        let (timelines, unknown) = SubscriptionTimeline.build(transactions, facts: facts, catalog: catalog)
        let starts = periodStarts(interval, from: from, to: to, now: now)
        let consumables = transactions.filter { $0.productType == .consumable && $0.ownershipType != LedgerRule.familyShared }
        let periods = starts.map { start in
            let end = interval.next(after: start)
            let closingAt = min(end, now)
            var period = Period(
                start: start, end: end, activeAtStart: timelines.count { $0.isPaying(at: start) },
                closing: snapshot(timelines, at: closingAt, reporting: reporting))
            for timeline in timelines {
                if let firstPaid = timeline.periods.first(where: { !$0.isTrial }), start <= firstPaid.start, firstPaid.start < end {
                    period.newSubscriptions += 1
                }
                for trial in timeline.periods where trial.isTrial && start <= trial.start && trial.start < end {
                    period.trialsStarted += 1
                    let deadline = trial.end.addingTimeInterval(conversionWindow)
                    let converted = timeline.periods.contains { !$0.isTrial && $0.start >= trial.start && $0.start <= deadline }
                    if converted {
                        period.trialsConverted += 1
                    } else if now < deadline {
                        period.trialsPending += 1
                    }
                }
                if timeline.isPaying(at: start), !timeline.isPaying(at: closingAt) { period.churned += 1 }
            }
            period.trialConversionRate = ratio(period.trialsConverted, period.trialsStarted - period.trialsPending)
            period.churnRate = ratio(period.churned, period.activeAtStart)
            for record in consumables where start <= record.purchaseDate && record.purchaseDate < end {
                period.creditsSold += record.credits
                if record.isRevoked { period.creditsRefunded += record.credits }
            }
            return period
        }
        let current = Current(
            snapshot: snapshot(timelines, at: now, reporting: reporting),
            inBillingRetry: timelines.count { $0.inBillingRetry && $0.period(at: now) == nil },
            inGracePeriod: timelines.count { timeline in
                guard let graceEnd = timeline.graceEnd, let last = timeline.periods.last else { return false }
                return last.end <= now && now < graceEnd
            })
        return SubscriptionMetrics(
            interval: interval, periods: periods, current: current, unknownPeriods: unknown.isEmpty ? nil : unknown,
            earlierPeriodsOmitted: nil)
    }

    static func snapshot(_ timelines: [SubscriptionTimeline], at instant: Date, reporting: ReportingCurrency?) -> Snapshot {
        var snapshot = Snapshot(at: instant)
        var mrr: [String: Int64] = [:]
        for timeline in timelines {
            guard let period = timeline.period(at: instant) else { continue }
            if period.isTrial {
                snapshot.activeTrials += 1
                continue
            }
            snapshot.activeSubscriptions += 1
            guard let micros = period.monthlyMicros, let currency = period.currency,
                micros.magnitude <= MetricContribution.largestAmount.magnitude
            else { continue }
            mrr[currency] = mrr[currency, default: 0].addingReportingOverflow(micros).partialValue
        }
        return finish(snapshot, mrr: mrr, at: instant, reporting: reporting)
    }

    /// The starts of the periods from `from`'s to the range's end (cut at now), at most `maximumPeriods`.
    static func periodStarts(_ interval: ReportInterval, from: Date, to: Date, now: Date) -> [Date] {
        var starts: [Date] = []
        var start = interval.start(of: from)
        let last = min(to, now)
        while start < last, starts.count < maximumPeriods {
            starts.append(start)
            start = interval.next(after: start)
        }
        return starts
    }

    /// A ratio of counts to six places (not money: counts are exact, the ratio is for charts).
    static func ratio(_ numerator: Int, _ denominator: Int) -> Double? {
        guard denominator > 0 else { return nil }
        return (Double(numerator) / Double(denominator) * 1_000_000).rounded() / 1_000_000
    }
}

extension ReportInterval {
    /// The start of the period after the one starting at `start`.
    public func next(after start: Date) -> Date {
        let calendar = RevenueReport.calendar
        let next: Date? =
            switch self {
            case .day: calendar.date(byAdding: .day, value: 1, to: start)
            case .week: calendar.date(byAdding: .day, value: 7, to: start)
            case .month: calendar.date(byAdding: .month, value: 1, to: start)
            }
        return next ?? start.addingTimeInterval(86_400)
    }
}
