import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import NIOCore
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// The console's pages for finance and operations: catalog and ledger (with its downloads), Apple's
/// health and the queue, webhook endpoints. Read-only; every figure through the API's use cases.
extension ConsoleController {
    /// Rows shown on the ledger page; the downloads hold every row of the range.
    static let ledgerRowsShown = 500

    func registerOperations<Routes: RouterMethods>(on console: Routes) where Routes.Context == StorekeeperRequestContext {
        console.get("apps/:app/ledger") { request, ctx in
            try await page(request) { session in try await ledgerPage(request, ctx, session) }
        }
        for format in ["csv", "json"] {
            console.get("apps/:app/ledger.\(format)") { request, ctx in
                try await page(request) { _ in try await ledgerDownload(request, ctx, format: format) }
            }
        }
        console.get("health") { request, _ in
            try await page(request) { session in try await healthPage(session) }
        }
        console.get("apps/:app/webhooks") { request, ctx in
            try await page(request) { session in try await webhooksPage(ctx, session) }
        }
    }

    private func ledgerPage(_ request: Request, _ ctx: StorekeeperRequestContext, _ session: ConsoleSession) async throws -> Response {
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let query = try AdminController.ledgerQuery(QueryInput(request), appId: app.id)
        let entries = try await context.useCases.purchases.ledger(query)
        let products = try await context.useCases.catalog.products(appId: app.id)
        // The same range for the downloads, as the page was asked.
        let range = request.uri.query.map { "?\($0)" } ?? ""
        let base = "/console/apps/\(Self.pathSegment(app.id))/ledger"
        let shown = entries.suffix(Self.ledgerRowsShown).reversed()
        let data: [String: Any] = [
            "products": products.map { product -> [String: Any] in
                [
                    "id": product.productId, "type": product.type.rawValue, "status": product.status.rawValue,
                    "price": product.priceMicros.map { "\(Self.money($0)) \(product.currency ?? "")" } ?? "—", "duration": product.duration ?? "—",
                ]
            },
            "environments": ["production", "sandbox"].map { ["value": $0, "selected": $0 == query.environment] },
            "from": query.from == .distantPast ? "" : Self.day(query.from), "to": query.to == .distantFuture ? "" : Self.day(query.to),
            "csv": base + ".csv" + range, "json": base + ".json" + range, "count": entries.count, "cut": entries.count > shown.count,
            "shown": shown.count,
            "rows": shown.map { entry -> [String: Any] in
                [
                    "purchased": Self.instant(entry.purchaseDate), "user": entry.appUserId, "product": entry.productId,
                    "transaction": entry.transactionId, "event": entry.event.rawValue,
                    "amount": entry.priceMicros.map { "\(Self.money($0)) \(entry.currency ?? "")" } ?? "—",
                    "proceeds": entry.proceedsMicros.map(Self.money) ?? "—", "storefront": entry.storefront ?? "—",
                    "estimated": entry.estimated ? "yes" : "no",
                ]
            },
        ]
        return render("\(app.id): catalog and ledger", "ledger", data, session: session)
    }

    /// The ledger of the range as the admin API gives it (`format=csv|json`), as a download.
    private func ledgerDownload(_ request: Request, _ ctx: StorekeeperRequestContext, format: String) async throws -> Response {
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let entries = try await context.useCases.purchases.ledger(try AdminController.ledgerQuery(QueryInput(request), appId: app.id))
        var response =
            format == "csv"
            ? Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: LedgerCSV.render(entries))))
            : try StorekeeperJSON.response(["entries": entries])
        response.headers[.contentDisposition] = "attachment; filename=\"ledger-\(Self.pathSegment(app.id)).\(format)\""
        response.headers[.cacheControl] = "no-store"
        return response
    }

    private func healthPage(_ session: ConsoleSession) async throws -> Response {
        let now = context.now()
        let flagAfter = context.configuration.flagAfterSeconds
        let counts = try await context.useCases.operations.counts(
            appIds: context.apps.map(\.id), flagBefore: now.addingTimeInterval(-flagAfter), now: now)
        let data: [String: Any] = [
            "endpoints": (context.appleHealth?.snapshot() ?? []).map { endpoint, health -> [String: Any] in
                [
                    "endpoint": endpoint.label, "state": health.state.rawValue, "since": Self.instant(health.since),
                    "failures": health.consecutiveFailures, "nextProbe": health.nextProbeAt.map(Self.instant) ?? "—",
                ]
            },
            "verificationStates": VerificationState.allCases.map { ["state": $0.rawValue, "count": counts.verifications[$0] ?? 0] },
            "flagAfter": "\(Int(flagAfter)) s", "flagged": counts.flagged, "waiting": counts.waiting,
            "oldestWaiting": counts.waiting == 0 ? "—" : "\(Int(counts.oldestWaitingSeconds)) s",
        ]
        return render("Apple health and the queue", "health", data, session: session)
    }

    private func webhooksPage(_ ctx: StorekeeperRequestContext, _ session: ConsoleSession) async throws -> Response {
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let endpoints = try await context.useCases.webhookEndpoints.endpoints(appId: app.id)
        let now = context.now()
        let counts = try await context.useCases.operations.counts(
            appIds: [app.id], flagBefore: now.addingTimeInterval(-context.configuration.flagAfterSeconds), now: now)
        let data: [String: Any] = [
            // Never the signing secrets: the URL, the state, what it receives.
            "endpoints": endpoints.map { endpoint -> [String: Any] in
                [
                    "id": endpoint.id, "url": endpoint.url, "state": endpoint.state.rawValue, "paused": endpoint.pausedReason ?? "—",
                    "types": endpoint.eventTypes.isEmpty ? "every event" : endpoint.eventTypes.map(\.rawValue).joined(separator: ", "),
                ]
            },
            "deliveries": WebhookDelivery.State.allCases.map { ["state": $0.rawValue, "count": counts.deliveries[$0] ?? 0] },
        ]
        return render("\(app.id): webhooks", "webhooks", data, session: session)
    }
}
