import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Figures for operators and finance, computed from the ledger and subscription facts
/// (docs/ANALYTICS.md). Admin only; the definitions live in the domain, this only translates.
struct AnalyticsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let metrics = router.admin("v1/admin/apps/:app/metrics")
        metrics.get("revenue") { request, ctx in
            let (app, query) = try appAndQuery(request, ctx)
            let environment = try query.environment()
            let interval = try query.interval()
            let from = try query.date("from") ?? Date.distantPast
            let to = try query.date("to") ?? Date.distantFuture
            guard from <= to else { throw StorekeeperError(.invalidRequest, "from must not be after to") }
            let report = try await context.useCases.revenue(
                appId: app.id, environment: environment, from: from, to: to, interval: interval, reporting: app.reporting)
            return try StorekeeperJSON.response(report)
        }
        metrics.get("subscriptions") { request, ctx in
            let (app, query) = try appAndQuery(request, ctx)
            let environment = try query.environment()
            let interval = try query.interval()
            let now = context.now()
            let (from, to, omitted) = try Self.range(query, interval: interval, now: now)
            var report = try await context.useCases.subscriptionMetrics(
                appId: app.id, environment: environment, from: from, to: to, interval: interval, now: now, reporting: app.reporting)
            report.earlierPeriodsOmitted = omitted ? true : nil
            return try StorekeeperJSON.response(report)
        }
        metrics.get("cohorts") { request, ctx in
            let (app, query) = try appAndQuery(request, ctx)
            let environment = try query.environment()
            let now = context.now()
            let (from, to, omitted) = try Self.range(query, interval: .month, now: now)
            var report = try await context.useCases.subscriptionMetrics.cohorts(
                appId: app.id, environment: environment, from: from, to: to, now: now)
            report.earlierCohortsOmitted = omitted ? true : nil
            return try StorekeeperJSON.response(report)
        }
        metrics.get("ltv") { request, ctx in
            let (app, query) = try appAndQuery(request, ctx)
            let environment = try query.environment()
            let now = context.now()
            let (from, to, omitted) = try Self.range(query, interval: .month, now: now)
            var report = try await context.useCases.subscriptionMetrics.lifetimeValue(
                appId: app.id, environment: environment, from: from, to: to, now: now, reporting: app.reporting)
            report.earlierCohortsOmitted = omitted ? true : nil
            return try StorekeeperJSON.response(report)
        }
    }

    /// The app in the route's path, and the query.
    private func appAndQuery(_ request: Request, _ ctx: AdminRequestContext) throws -> (AppConfiguration, QueryInput) {
        (try context.app(id: try ctx.parameters.decoded("app")), QueryInput(request))
    }

    /// `from`/`to` for figures by period: by default the twelve periods up to now; never more than
    /// `SubscriptionMetrics.maximumPeriods`, the latest kept (`earlierPeriodsOmitted`): a range is
    /// the caller's choice, the work it causes is not.
    static func range(_ query: QueryInput, interval: ReportInterval, now: Date) throws -> (from: Date, to: Date, omitted: Bool) {
        let givenFrom = try query.date("from")
        let givenTo = try query.date("to")
        if let givenFrom, let givenTo, givenFrom > givenTo { throw StorekeeperError(.invalidRequest, "from must not be after to") }
        let to = givenTo ?? max(now, givenFrom ?? now)
        let end = min(to, now)
        // Walk back from the last period starting before `end`.
        var first = interval.start(of: end)
        if first >= end { first = interval.start(of: first.addingTimeInterval(-1)) }
        let wanted = givenFrom.map { interval.start(of: $0) }
        let limit = wanted == nil ? 12 : SubscriptionMetrics.maximumPeriods
        var count = 1
        while count < limit {
            if let wanted, first <= wanted { break }
            first = interval.start(of: first.addingTimeInterval(-1))
            count += 1
        }
        let omitted = wanted.map { $0 < first } ?? false
        return (max(first, wanted ?? first), to, omitted)
    }
}

extension QueryInput {
    fileprivate func environment() throws -> String {
        try oneOf("environment", ["production", "sandbox"]) ?? "production"
    }

    fileprivate func interval() throws -> ReportInterval {
        try oneOf("interval", ReportInterval.allCases.map(\.rawValue)).flatMap(ReportInterval.init) ?? .month
    }
}
