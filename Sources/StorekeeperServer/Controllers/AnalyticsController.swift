import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain

/// Figures for operators and finance, computed from the ledger and subscription facts
/// (docs/ANALYTICS.md). Admin only; the definitions live in the domain, this only translates.
struct AnalyticsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let metrics = router.group("v1/admin/apps/:app/metrics")
        metrics.get("revenue") { request, ctx in
            let (app, query) = try admit(request, ctx)
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
            let (app, query) = try admit(request, ctx)
            let environment = try query.environment()
            let interval = try query.interval()
            let now = context.now()
            let (from, to) = try Self.range(query, interval: interval, now: now)
            let report = try await context.useCases.subscriptionMetrics(
                appId: app.id, environment: environment, from: from, to: to, interval: interval, now: now, reporting: app.reporting)
            return try StorekeeperJSON.response(report)
        }
        metrics.get("cohorts") { request, ctx in
            let (app, query) = try admit(request, ctx)
            let environment = try query.environment()
            let now = context.now()
            let (from, to) = try Self.range(query, interval: .month, now: now)
            let report = try await context.useCases.subscriptionMetrics.cohorts(
                appId: app.id, environment: environment, from: from, to: to, now: now)
            return try StorekeeperJSON.response(report)
        }
    }

    private func admit(_ request: Request, _ ctx: some RequestContext) throws -> (AppConfiguration, QueryInput) {
        try context.authenticateAdmin(request)
        return (try context.app(id: try ctx.parameters.decoded("app")), QueryInput(request))
    }

    /// `from`/`to` for figures by period: by default the twelve periods up to now; at most
    /// `SubscriptionMetrics.maximumPeriods` periods, refused beyond (a range is the caller's choice,
    /// the work it causes is not).
    static func range(_ query: QueryInput, interval: ReportInterval, now: Date) throws -> (Date, Date) {
        let to = try query.date("to") ?? now
        var from = interval.start(of: min(to, now))
        if let given = try query.date("from") {
            from = given
        } else {
            for _ in 0..<11 { from = interval.start(of: from.addingTimeInterval(-1)) }
        }
        guard from <= to else { throw StorekeeperError(.invalidRequest, "from must not be after to") }
        var start = interval.start(of: from)
        var count = 0
        while start < min(to, now) {
            count += 1
            guard count <= SubscriptionMetrics.maximumPeriods else {
                throw StorekeeperError(
                    .invalidRequest, "at most \(SubscriptionMetrics.maximumPeriods) periods of a \(interval.rawValue): narrow from and to")
            }
            start = interval.next(after: start)
        }
        return (from, to)
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
