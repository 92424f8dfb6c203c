public import Foundation
public import Persistence
public import StorekeeperDomain

/// Revenue by period (docs/ANALYTICS.md): the whole days of the range from the day totals the
/// store keeps with each ledger row, the part-days at its edges from the rows themselves, summed
/// by `RevenueReport`, so both backends give the same figures whatever the history's size.
public struct ReadRevenue: Sendable {
    let store: any LedgerStore

    public init(store: any LedgerStore) {
        self.store = store
    }

    public func callAsFunction(
        appId: String, environment: String, from: Date, to: Date, interval: ReportInterval, reporting: ReportingCurrency?
    ) async throws -> RevenueReport {
        let firstMidnight = Self.midnight(atOrAfter: from)
        let lastMidnight = ReportInterval.day.start(of: to)
        var days: [RevenueDay] = []
        var edges: [LedgerEntry] = []
        if firstMidnight < lastMidnight {
            days = try await store.revenueDays(appId: appId, environment: environment, from: firstMidnight, to: lastMidnight)
            if from < firstMidnight {
                edges += try await store.ledger(LedgerQuery(appId: appId, environment: environment, from: from, to: firstMidnight))
            }
            if lastMidnight < to {
                edges += try await store.ledger(LedgerQuery(appId: appId, environment: environment, from: lastMidnight, to: to))
            }
        } else {
            edges = try await store.ledger(LedgerQuery(appId: appId, environment: environment, from: from, to: to))
        }
        return RevenueReport.build(days: days + RevenueDay.grouping(edges), interval: interval, reporting: reporting)
    }

    static func midnight(atOrAfter instant: Date) -> Date {
        let start = ReportInterval.day.start(of: instant)
        return start < instant ? ReportInterval.day.next(after: start) : start
    }
}
