public import Foundation
public import Persistence
public import StorekeeperDomain

/// Revenue by period, read from the ledger (docs/ANALYTICS.md): the rows of the range through
/// the ledger's period index, summed by `RevenueReport`, so both backends give the same figures.
public struct ReadRevenue: Sendable {
    let store: any LedgerStore

    public init(store: any LedgerStore) {
        self.store = store
    }

    public func callAsFunction(
        appId: String, environment: String, from: Date, to: Date, interval: ReportInterval, reporting: ReportingCurrency?
    ) async throws -> RevenueReport {
        let entries = try await store.ledger(LedgerQuery(appId: appId, environment: environment, from: from, to: to))
        return RevenueReport.build(entries, interval: interval, reporting: reporting)
    }
}
