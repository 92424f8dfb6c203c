public import Foundation

/// Customers grouped by the month (UTC) of their first paid purchase, and how many of each group
/// were still paying in each month after (docs/ANALYTICS.md). Paying in a month: a paid
/// subscription period overlapping it, or a purchase of anything else in it. Free trials and a
/// Family Sharing member's copies are nobody's payment. Pure: `now` is an input.
public struct CohortReport: Codable, Sendable, Hashable {
    public struct Cohort: Codable, Sendable, Hashable {
        /// `YYYY-MM`.
        public var month: String
        public var customers: Int
        /// Index k: customers paying in the k-th month after `month` (0: the month itself, so
        /// `customers`), up to the month holding now.
        public var retained: [Int]
    }

    public var cohorts: [Cohort]
    /// The range asked for more than 1,000 months: the latest were kept.
    public var earlierCohortsOmitted: Bool?

    /// Cohorts whose month starts in [from, to), oldest first; empty months are left out.
    public static func build(
        transactions: [TransactionRecord], facts: [SubscriptionFacts], catalog: [String: Product], from: Date, to: Date, now: Date
    ) -> CohortReport {
        let calendar = RevenueReport.calendar
        let (timelines, _) = SubscriptionTimeline.build(transactions, facts: facts, catalog: catalog)
        // Month index (months since 1970-01) → customers paying in it.
        var paying: [String: Set<Int>] = [:]
        func index(_ date: Date) -> Int {
            let parts = calendar.dateComponents([.year, .month], from: date)
            return ((parts.year ?? 1970) - 1970) * 12 + (parts.month ?? 1) - 1
        }
        for record in transactions
        where record.productType != .autoRenewable && record.productType != .freeSubscription
            && record.ownershipType != LedgerRule.familyShared
        {
            paying[record.appUserId, default: []].insert(index(record.purchaseDate))
        }
        let nowIndex = index(now)
        for timeline in timelines {
            for period in timeline.periods where !period.isTrial {
                // The period's last instant is just before its end; months after now are not known yet.
                let last = min(index(max(period.start, period.end.addingTimeInterval(-0.001))), nowIndex)
                let first = index(period.start)
                guard first <= last else { continue }
                for month in first...last { paying[timeline.appUserId, default: []].insert(month) }
            }
        }
        let first = index(from)
        let limit = index(to.addingTimeInterval(-0.001))
        var byMonth: [Int: [Set<Int>]] = [:]
        for months in paying.values {
            guard let start = months.min(), start >= first, start <= limit, start <= nowIndex else { continue }
            byMonth[start, default: []].append(months)
        }
        let cohorts = byMonth.keys.sorted().map { start in
            let members = byMonth[start]!
            let retained = (start...nowIndex).map { month in members.count { $0.contains(month) } }
            let year = 1970 + start / 12
            let month = start % 12 + 1
            return Cohort(month: "\(year)-\(month < 10 ? "0" : "")\(month)", customers: members.count, retained: retained)
        }
        return CohortReport(cohorts: cohorts, earlierCohortsOmitted: nil)
    }
}
