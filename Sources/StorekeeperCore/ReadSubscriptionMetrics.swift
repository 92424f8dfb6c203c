public import Foundation
public import Persistence
public import StorekeeperDomain

/// Subscription figures and cohorts (docs/ANALYTICS.md). The figures come from what the store
/// keeps with each grant (`MetricReadout`: day totals, whatever the number of customers); cohorts
/// from an app's transactions of one environment and its subscriptions, read through their
/// indexes, with the catalog for billing periods and list prices. The definitions are
/// `SubscriptionMetrics` and `CohortReport`, so both backends give the same figures.
public struct ReadSubscriptionMetrics: Sendable {
    public typealias Store = LedgerStore & CatalogStore
    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public func callAsFunction(
        appId: String, environment: String, from: Date, to: Date, interval: ReportInterval, now: Date, reporting: ReportingCurrency?
    ) async throws -> SubscriptionMetrics {
        let readout = try await store.metricReadout(appId: appId, environment: environment, now: now, interval: interval)
        return SubscriptionMetrics.build(readout: readout, interval: interval, from: from, to: to, now: now, reporting: reporting)
    }

    public func cohorts(appId: String, environment: String, from: Date, to: Date, now: Date) async throws -> CohortReport {
        // Retention is followed to now, whatever the range of first months.
        let facts = try await read(appId: appId, environment: environment, before: now)
        return CohortReport.build(
            transactions: facts.transactions, facts: facts.subscriptions, catalog: facts.catalog, from: from, to: to, now: now)
    }

    /// Realized lifetime value by cohort from the environment's ledger up to `now`
    /// (`LifetimeValueReport`), also in the app's `reporting` currency when it has one.
    public func lifetimeValue(
        appId: String, environment: String, from: Date, to: Date, now: Date, reporting: ReportingCurrency?
    ) async throws -> LifetimeValueReport {
        let ledger = try await store.ledger(
            LedgerQuery(appId: appId, environment: environment, from: .distantPast, to: now.addingTimeInterval(0.001)))
        return LifetimeValueReport.build(ledger, from: from, to: to, now: now, reporting: reporting)
    }

    private func read(
        appId: String, environment: String, before: Date
    ) async throws -> (transactions: [TransactionRecord], subscriptions: [SubscriptionFacts], catalog: [String: Product]) {
        let transactions = try await store.transactions(appId: appId, environment: environment, purchasedBefore: before)
        let subscriptions = try await store.subscriptions(appId: appId, environment: environment)
        let products = try await store.products(appId: appId)
        return (transactions, subscriptions, Dictionary(products.map { ($0.productId, $0) }, uniquingKeysWith: { a, _ in a }))
    }
}
