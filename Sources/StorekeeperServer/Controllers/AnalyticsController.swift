import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain

/// Figures for operators and finance, computed from the ledger and subscription facts
/// (docs/ANALYTICS.md). Admin only; the definitions live in the domain, this only translates.
struct AnalyticsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        router.group("v1/admin/apps/:app/metrics").get("revenue") { request, ctx in
            try context.authenticateAdmin(request)
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let query = QueryInput(request)
            let environment = try query.oneOf("environment", ["production", "sandbox"]) ?? "production"
            let interval = try query.oneOf("interval", ReportInterval.allCases.map(\.rawValue)).flatMap(ReportInterval.init) ?? .month
            let from = try query.date("from") ?? Date.distantPast
            let to = try query.date("to") ?? Date.distantFuture
            guard from <= to else { throw StorekeeperError(.invalidRequest, "from must not be after to") }
            let report = try await context.useCases.revenue(
                appId: app.id, environment: environment, from: from, to: to, interval: interval, reporting: app.reporting)
            return try StorekeeperJSON.response(report)
        }
    }
}
