public import Foundation

extension SubscriptionMetrics {
    /// The same figures as `build(transactions:…)`, from kept totals: what the console and the
    /// API answer with, in time that grows with the days of history rather than the customers.
    public static func build(
        readout: MetricReadout, interval: ReportInterval, from: Date, to: Date, now: Date, reporting: ReportingCurrency? = nil
    ) -> SubscriptionMetrics {
        let sums = MetricSums(readout)
        let starts = periodStarts(interval, from: from, to: to, now: now)
        let periods = starts.map { start in
            let end = interval.next(after: start)
            let closingAt = min(end, now)
            var period = Period(
                start: start, end: end, activeAtStart: Int(sums.state(.paying, at: start)),
                closing: snapshot(sums, at: closingAt, reporting: reporting))
            period.newSubscriptions = Int(sums.events(.firstPaid, from: start, to: end))
            period.trialsStarted = Int(sums.events(.trialStarted, from: start, to: end))
            period.trialsConverted = Int(sums.events(.trialConverted, from: start, to: end))
            period.trialsPending = readout.openTrials.count { trial in
                trial.since.map { start <= $0 && $0 < end } ?? false
            }
            if end <= now {
                period.churned = Int(sums.events(.churn(interval), from: start, to: end))
            } else {
                // The period under way is measured at now: paying at its start, not now.
                let ends = Dictionary(grouping: readout.recentEnds.filter { start < $0.contribution.at }, by: \.source)
                period.churned = ends.values.count { runs in
                    runs.contains { ($0.contribution.since ?? .distantFuture) <= start }
                        && runs.contains { $0.contribution.until.map { $0 > now } ?? true }
                }
            }
            period.trialConversionRate = ratio(period.trialsConverted, period.trialsStarted - period.trialsPending)
            period.churnRate = ratio(period.churned, period.activeAtStart)
            period.creditsSold = Int(sums.events(.creditsSold, from: start, to: end))
            period.creditsRefunded = Int(sums.events(.creditsRefunded, from: start, to: end))
            return period
        }
        let unknown = sums.keys(.unknownPeriod).filter { sums.state(.unknownPeriod, $0, at: .distantFuture) > 0 }
        let current = Current(
            snapshot: snapshot(sums, at: now, reporting: reporting), inBillingRetry: Int(sums.state(.retry, at: now)),
            inGracePeriod: Int(sums.state(.grace, at: now)))
        return SubscriptionMetrics(
            interval: interval, periods: periods, current: current, unknownPeriods: unknown.isEmpty ? nil : unknown,
            earlierPeriodsOmitted: nil)
    }

    static func snapshot(_ sums: MetricSums, at instant: Date, reporting: ReportingCurrency?) -> Snapshot {
        var snapshot = Snapshot(at: instant)
        snapshot.activeSubscriptions = Int(sums.state(.paying, at: instant))
        snapshot.activeTrials = Int(sums.state(.trial, at: instant))
        var mrr: [String: Int64] = [:]
        for currency in sums.keys(.mrrSubscriptions) where sums.state(.mrrSubscriptions, currency, at: instant) > 0 {
            mrr[currency] = sums.state(.mrr, currency, at: instant)
        }
        return finish(snapshot, mrr: mrr, at: instant, reporting: reporting)
    }

    /// MRR per currency in code order, and in the reporting currency: each currency's total at the
    /// rate of `instant`'s month.
    static func finish(_ snapshot: Snapshot, mrr: [String: Int64], at instant: Date, reporting: ReportingCurrency?) -> Snapshot {
        var snapshot = snapshot
        snapshot.mrr = mrr.keys.sorted().map { Amount(currency: $0, micros: mrr[$0]!) }
        guard let reporting else { return snapshot }
        let month = RevenueReport.month(of: instant)
        var reported: Int64 = 0
        var missing: [String] = []
        for amount in snapshot.mrr {
            if let converted = reporting.convert(amount.micros, from: amount.currency, month: month) {
                reported = reported.addingReportingOverflow(converted).partialValue
            } else {
                missing.append("\(month) \(amount.currency)")
            }
        }
        snapshot.mrrReporting = Amount(currency: reporting.currency, micros: reported)
        snapshot.missingRates = missing.isEmpty ? nil : missing
        return snapshot
    }
}
