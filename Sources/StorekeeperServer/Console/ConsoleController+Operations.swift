import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import Logging
import NIOCore
import Persistence
import StorekeeperConsole
import StorekeeperCore
import StorekeeperDomain

/// The console's pages for finance and operations: catalog and ledger (with its downloads), Apple's
/// health and the queue, webhook endpoints. Read-only; every figure through the API's use cases.
extension ConsoleController {
    /// Rows shown on the ledger page; the downloads hold every row of the range.
    static let ledgerRowsShown = 500

    func registerOperations(pages: RouterGroup<ConsoleRequestContext>, actions: RouterGroup<ConsoleRequestContext>) {
        pages.get("apps/:app/ledger") { request, ctx in
            try await ledgerPage(request, ctx)
        }
        for format in ["csv", "json"] {
            pages.get("apps/:app/ledger.\(format)") { request, ctx in
                try await ledgerDownload(request, ctx, format: format)
            }
        }
        pages.get("health") { _, ctx in
            try await healthPage(ctx.session)
        }
        pages.get("apps/:app/webhooks") { request, ctx in
            try await webhooksPage(request, ctx)
        }
        // Dead letters back to the queue: one, or all of an endpoint's (admin, CSRF token).
        actions.post("apps/:app/webhooks/:endpoint/replay") { request, ctx in
            let session = ctx.session
            let text = ctx.form
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let endpointId = try ctx.parameters.decoded("endpoint")
            let delivery = Self.decodeForm(ReplayForm.self, text)?.deliveryId.flatMap { $0.isEmpty ? nil : $0 }
            var replayed = 0
            if let endpoint = try await context.useCases.webhookEndpoints.endpoint(appId: app.id, id: endpointId) {
                replayed = try await context.useCases.webhookEndpoints.replay(
                    endpoint: endpoint, deliveryId: delivery, actor: ctx.actor, now: context.now())
            }
            context.logger.notice(
                "console: webhook replay",
                metadata: ["account": "\(session.name)", "endpoint": "\(endpointId)", "replayed": "\(replayed)"])
            let notice = "Replayed \(replayed) dead deliver\(replayed == 1 ? "y" : "ies") of endpoint \(endpointId)."
            return redirect("/console/apps/\(ConsoleFormat.pathSegment(app.id))/webhooks?\(noticeQuery(notice, session))")
        }
        // One dead letter given up for good, so its subscriber's later events go on without it (admin, CSRF token).
        actions.post("apps/:app/webhooks/:endpoint/skip") { request, ctx in
            let session = ctx.session
            let text = ctx.form
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let endpointId = try ctx.parameters.decoded("endpoint")
            let delivery = Self.decodeForm(ReplayForm.self, text)?.deliveryId ?? ""
            var skipped = false
            if !delivery.isEmpty, let endpoint = try await context.useCases.webhookEndpoints.endpoint(appId: app.id, id: endpointId) {
                skipped = try await context.useCases.webhookEndpoints.skip(
                    endpoint: endpoint, deliveryId: delivery, actor: ctx.actor, now: context.now())
            }
            context.logger.notice(
                "console: webhook skip",
                metadata: ["account": "\(session.name)", "endpoint": "\(endpointId)", "skipped": "\(skipped)"])
            let notice =
                skipped ? "Skipped dead delivery \(delivery) of endpoint \(endpointId)." : "No such dead delivery of endpoint \(endpointId)."
            return redirect("/console/apps/\(ConsoleFormat.pathSegment(app.id))/webhooks?\(noticeQuery(notice, session))")
        }
    }

    /// Dead deliveries listed per endpoint on the webhooks page.
    static let deadLettersShown = 50
    /// Recent deliveries per endpoint the success rate is taken over.
    static let recentDeliveries = 200

    private func ledgerPage(_ request: Request, _ ctx: ConsoleRequestContext) async throws -> Response {
        let session = ctx.session
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let query = try LedgerController.ledgerQuery(QueryInput(request), appId: app.id)
        let entries = try await context.useCases.purchases.ledger(query)
        let products = try await context.useCases.catalog.products(appId: app.id)
        // The same range for the downloads, as the page was asked.
        let range = request.uri.query.map { "?\($0)" } ?? ""
        let base = "/console/apps/\(ConsoleFormat.pathSegment(app.id))/ledger"
        let page = LedgerPage(products: products, entries: entries, query: query, limit: Self.ledgerRowsShown, downloads: (base, range))
        return render("\(app.id): catalog and ledger", page, session: session)
    }

    /// The ledger of the range as the admin API gives it (`format=csv|json`), as a download.
    private func ledgerDownload(_ request: Request, _ ctx: ConsoleRequestContext, format: String) async throws -> Response {
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        var response = try await LedgerController.ledger(request, app: app, format: format, context: context)
        response.headers[.contentDisposition] = "attachment; filename=\"ledger-\(ConsoleFormat.pathSegment(app.id)).\(format)\""
        response.headers[.cacheControl] = "no-store"
        return response
    }

    /// The hours of calls to Apple the health page lists (the current one included).
    static let callHoursShown = 24
    /// How far back the health page lists outages.
    static let outageDays = 30
    /// The gap-fill's pulls the health page lists (one per app and interval, per process).
    static let gapFillsShown = 50

    private func healthPage(_ session: ConsoleSession) async throws -> Response {
        let now = context.now()
        let flagAfter = context.configuration.flagAfterSeconds
        let counts = try await context.useCases.operations.counts(
            appIds: context.apps.map(\.id), flagBefore: now.addingTimeInterval(-flagAfter), now: now)
        let page = HealthPage(
            endpoints: (context.appleHealth?.snapshot() ?? []).map { (label: $0.label, health: $1) },
            calls: try await context.appleCalls.exclusively {
                try await context.useCases.appleCalls.hours(
                    since: now.addingTimeInterval(-Double(Self.callHoursShown - 1) * 3_600), unflushed: context.appleCalls.unflushed)
            },
            callHours: Self.callHoursShown,
            outages: try await context.useCases.operations.outages(since: now.addingTimeInterval(-Double(Self.outageDays) * 86_400)),
            outageDays: Self.outageDays,
            notifications: try await context.useCases.operations.notificationCounts(since: now.addingTimeInterval(-86_400)),
            gapFills: try await context.useCases.gapFillHistory.runs(
                since: now.addingTimeInterval(-GapFillRun.keptSeconds), limit: Self.gapFillsShown),
            gapFillShown: Self.gapFillsShown, counts: counts, flagAfterSeconds: flagAfter, now: now)
        return render("Apple health and the queue", page, session: session)
    }

    private func webhooksPage(_ request: Request, _ ctx: ConsoleRequestContext) async throws -> Response {
        let session = ctx.session
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let actions = context.useCases.webhookEndpoints
        let endpoints = try await actions.endpoints(appId: app.id)
        let now = context.now()
        let counts = try await context.useCases.operations.counts(
            appIds: [app.id], flagBefore: now.addingTimeInterval(-context.configuration.flagAfterSeconds), now: now)
        let csrf = signer.csrfToken(for: session.nonce)
        let canAct = session.role == .admin
        var watched: [WebhooksPage.Watched] = []
        for endpoint in endpoints {
            let (delivered, ended) = try await actions.outcomes(endpointId: endpoint.id, limit: Self.recentDeliveries)
            let dead = try await actions.deliveries(endpointId: endpoint.id, state: .dead, limit: Self.deadLettersShown)
            watched.append(WebhooksPage.Watched(endpoint: endpoint, delivered: delivered, ended: ended, dead: dead))
        }
        let page = WebhooksPage(appId: app.id, watched: watched, deliveryCounts: counts.deliveries, mayAct: canAct, csrf: csrf)
        return render("\(app.id): webhooks", page, session: session, notice: sealedNotice(request, session))
    }
}

/// The form replaying dead deliveries: one (`deliveryId`), or every one of the endpoint's; or skipping one.
struct ReplayForm: Decodable {
    var deliveryId: String?
}
