import AppStoreClient
import Foundation
import Hummingbird
import JobQueue
import NIOCore
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Operator routes, authenticated by the admin key: catalog, verifications, ledger.
struct AdminController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin")
        admin.get("apps/:app/products") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try StorekeeperJSON.response(["products": try await context.useCases.catalog.products(appId: app.id)])
        }
        admin.post("apps/:app/products") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let product = try await decodeProduct(request, productId: nil)
            guard try await context.useCases.catalog.create(appId: app.id, product: product, now: context.now()) else {
                throw StorekeeperError(.conflict, "product '\(product.productId)' exists; use PUT to change it")
            }
            return try StorekeeperJSON.response(product, status: .created)
        }
        admin.put("apps/:app/products/:productId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let product = try await decodeProduct(request, productId: try ctx.parameters.decoded("productId"))
            try await context.useCases.catalog.save(appId: app.id, product: product, now: context.now())
            return try StorekeeperJSON.response(product)
        }
        admin.delete("apps/:app/products/:productId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let productId = try ctx.parameters.decoded("productId")
            guard try await context.useCases.catalog.delete(appId: app.id, productId: productId) else {
                throw StorekeeperError(.notFound, "no product '\(productId)'")
            }
            return Response(status: .noContent)
        }
        admin.get("apps/:app/storekit-config") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let file = StoreKitConfigurationFile.contents(
                appId: app.id, products: try await context.useCases.catalog.products(appId: app.id), groups: app.subscriptionGroups,
                offers: app.offers)
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .contentDisposition: #"attachment; filename="Products.storekit""#],
                body: .init(byteBuffer: ByteBuffer(bytes: try StoreKitConfigurationFile.encode(file))))
        }
        registerEntitlements(on: admin)
        admin.get("verifications") { request, _ in
            return try await listVerifications(request)
        }
        admin.post("verifications/:id/retry") { request, ctx in
            let id = try ctx.parameters.decoded("id")
            switch try await context.useCases.requeueVerification(verificationId: id, actor: try AdminInput.actor(request, ctx), now: context.now()) {
            case .requeued: break
            case .notFound: throw StorekeeperError(.notFound, "no verification '\(id)'")
            case .busy: throw StorekeeperError(.verificationBusy, "verification '\(id)' is being verified right now")
            case .refused(let state): throw StorekeeperError(.conflict, "verification '\(id)' cannot be requeued from \(state.rawValue)")
            }
            context.signal.wake()
            guard let record = try await context.useCases.verifications.verification(id: id, appId: nil) else {
                throw StorekeeperError(.notFound, "no verification '\(id)'")
            }
            return try StorekeeperJSON.response(context.view(record), status: .accepted)
        }
        admin.post("apps/:app/notifications/gap-fill") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await gapFill(request, app: app)
        }
        admin.post("apps/:app/users/:appUserId/refresh") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await refresh(request, ctx, app: app, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        admin.get("apps/:app/app-transactions/:appTransactionId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await appTransactionOwners(app: app, id: try ctx.parameters.decoded("appTransactionId"))
        }
        admin.get("apple-health") { request, _ in
            return try StorekeeperJSON.response(AppleHealthView(context.appleHealth?.snapshot() ?? [], now: context.now()))
        }
        admin.get("apps/:app/ledger") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await ledger(request, app: app)
        }
    }

    /// Pulls Apple's notification history now (`?lookbackSeconds=`, default the policy's) and
    /// answers what it found; the scheduled gap-fill does the same every interval.
    private func gapFill(_ request: Request, app: AppConfiguration) async throws -> Response {
        guard context.serverAPIClients[app.id] != nil else {
            throw StorekeeperError(.serverAPINotConfigured, "app '\(app.id)' has no serverAPI key")
        }
        let policy = context.configuration.notificationGapFill
        let seconds = try QueryInput(request).seconds("lookbackSeconds", maximum: 180 * 86_400, excludingZero: true) ?? policy.lookbackSeconds
        let now = context.now()
        let report = try await NotificationGapFill(context: context, policy: policy).fill(
            app, from: now.addingTimeInterval(-seconds), to: now, cause: "operator")
        return try StorekeeperJSON.response(report)
    }

    /// Queues a refresh of one subscriber from the App Store Server API (their known original
    /// transactions' history and renewal info) and waits for it like a submission (`?wait=`).
    private func refresh(_ request: Request, _ ctx: AdminRequestContext, app: AppConfiguration, appUserId: String) async throws -> Response {
        let appUserId = try await context.resolve(app, appUserId)
        let wait = try QueryInput(request).wait(cap: context.configuration.maxWaitSeconds) ?? min(5, context.configuration.maxWaitSeconds)
        guard context.serverAPIClients[app.id] != nil else {
            throw StorekeeperError(.serverAPINotConfigured, "app '\(app.id)' has no serverAPI key")
        }
        let actor = try AdminInput.actor(request, ctx)
        guard
            let result = try await context.useCases.refreshSubscriber(appId: app.id, appUserId: appUserId, actor: actor, now: context.now())
        else {
            throw StorekeeperError(.notFound, "no purchase of '\(appUserId)' is known: nothing to refresh")
        }
        context.signal.wake()
        let verification = try await context.waitForFinal(result.verification, seconds: wait)
        return try StorekeeperJSON.response(
            context.view(verification), status: verification.state.isFinal ? .ok : .accepted,
            headers: [.location: "/v1/verifications/\(verification.id)"])
    }

    /// The transactions of one Apple account (`appTransactionId`) and the users holding them.
    private func appTransactionOwners(app: AppConfiguration, id: String) async throws -> Response {
        struct Owners: Encodable {
            var appTransactionId: String
            var appUserIds: [String]
            var transactions: [TransactionRecord]
        }
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-".utf8)
        guard (1...128).contains(id.utf8.count), id.utf8.allSatisfy(allowed.contains) else {
            throw StorekeeperError(.invalidRequest, "appTransactionId must be 1 to 128 letters, digits, '.', '_' or '-'")
        }
        guard let holders = try await context.useCases.purchases.holders(appId: app.id, appTransactionId: id) else {
            throw StorekeeperError(.notFound, "no stored transaction carries app transaction id '\(id)'")
        }
        return try StorekeeperJSON.response(
            Owners(appTransactionId: id, appUserIds: holders.appUserIds, transactions: holders.transactions))
    }

    /// The app's named entitlements: listed, created or replaced whole by id, deleted. A change
    /// shows in every subscriber answer and event from then on (they are built at read time).
    private func registerEntitlements(on admin: RouterGroup<AdminRequestContext>) {
        admin.get("apps/:app/entitlements") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try StorekeeperJSON.response(["entitlements": try await context.useCases.catalog.entitlements(appId: app.id)])
        }
        admin.put("apps/:app/entitlements/:entitlementId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("entitlementId")
            struct Body: Decodable { var products: [String] }
            let actor = try AdminInput.actor(request, ctx)
            let data = try await context.body(request)
            let body = try StorekeeperJSON.decode(Body.self, from: data)
            try AdminInput.refuseFields(data, except: ["products"], note: "the path names the entitlement")
            let definition = EntitlementDefinition(id: id, products: body.products)
            let problems = try await context.useCases.catalog.save(appId: app.id, entitlement: definition, actor: actor, now: context.now())
            guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
            return try StorekeeperJSON.response(definition)
        }
        admin.delete("apps/:app/entitlements/:entitlementId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("entitlementId")
            guard
                try await context.useCases.catalog.deleteEntitlement(
                    appId: app.id, entitlementId: id, actor: try AdminInput.actor(request, ctx), now: context.now())
            else {
                throw StorekeeperError(.notFound, "no entitlement '\(id)'")
            }
            return Response(status: .noContent)
        }
    }

    private func decodeProduct(_ request: Request, productId: String?) async throws -> Product {
        var product = try StorekeeperJSON.decode(Product.self, from: try await context.body(request))
        // The body must be a valid product on its own; the path's id then wins over the body's.
        try Self.requireValid(product)
        if let productId, productId != product.productId {
            product.productId = productId
            try Self.requireValid(product)
        }
        return product
    }

    private static func requireValid(_ product: Product) throws {
        let problems = product.validationProblems()
        guard problems.isEmpty else { throw StorekeeperError(.invalidProduct, problems.joined(separator: "; ")) }
    }

    private func listVerifications(_ request: Request) async throws -> Response {
        let query = QueryInput(request)
        var states: [VerificationState] = []
        if let text = query.string("state") {
            for name in text.split(separator: ",", omittingEmptySubsequences: false) {
                guard let state = VerificationState(rawValue: String(name)) else {
                    throw StorekeeperError(.invalidRequest, "state: unknown state '\(name)'")
                }
                states.append(state)
            }
        }
        let flaggedOnly = try query.boolean("flagged") ?? false
        if flaggedOnly, states.isEmpty { states = VerificationState.allCases.filter { !$0.isFinal } }
        let limit = try query.integer("limit", in: 1...1000) ?? 100
        let appId = query.string("app")
        if let appId { _ = try context.app(id: appId) }
        let createdBefore = flaggedOnly ? context.now().addingTimeInterval(-context.configuration.flagAfterSeconds) : nil
        let records = try await context.useCases.verifications.list(appId: appId, states: states, createdBefore: createdBefore, limit: limit)
        return try StorekeeperJSON.response(["verifications": records.map(context.view)])
    }

    /// The ledger's range from a query (`environment`, `from`, `to`): the API's and the console's.
    static func ledgerQuery(_ query: QueryInput, appId: String) throws -> LedgerQuery {
        let environment = try query.oneOf("environment", ["production", "sandbox"]) ?? "production"
        // Absent bounds are open: a `to` before 1970 with no `from` is a valid, empty range.
        let from = try query.date("from") ?? Date.distantPast
        let to = try query.date("to") ?? Date.distantFuture
        guard from <= to else { throw StorekeeperError(.invalidRequest, "from must not be after to") }
        return LedgerQuery(appId: appId, environment: environment, from: from, to: to)
    }

    private func ledger(_ request: Request, app: AppConfiguration) async throws -> Response {
        let query = QueryInput(request)
        let ledgerQuery = try Self.ledgerQuery(query, appId: app.id)
        let format = try query.oneOf("format", ["json", "csv"]) ?? "json"
        let entries = try await context.useCases.purchases.ledger(ledgerQuery)
        switch format {
        case "json":
            return try StorekeeperJSON.response(["entries": entries])
        case "csv":
            return Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: LedgerCSV.render(entries))))
        default:
            throw StorekeeperError(.invalidRequest, "format must be 'json' or 'csv'")
        }
    }
}

/// The ledger as CSV for finance: one row per entry, RFC 4180 quoting, prices in micro-units.
enum LedgerCSV {
    static let header = [
        "app_id", "app_user_id", "product_id", "product_type", "transaction_id", "original_transaction_id", "environment",
        "purchase_date", "event", "quantity", "price_micros", "currency", "state", "recorded_at", "imported", "estimated", "storefront",
        "offer_type", "offer_identifier", "offer_discount_type", "offer_period", "commission_rate", "proceeds_micros",
    ]

    static func render(_ entries: [LedgerEntry]) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var lines = [header.joined(separator: ",")]
        for e in entries {
            let identity: [String] = [
                e.appId, e.appUserId, e.productId, e.productType.rawValue, e.transactionId, e.originalTransactionId, e.environment,
                f.string(from: e.purchaseDate), e.event.rawValue, String(e.quantity),
            ]
            let money: [String] = [
                e.priceMicros.map(String.init) ?? "", e.currency ?? "", e.state, f.string(from: e.recordedAt), String(e.imported),
                String(e.estimated), e.storefront ?? "",
            ]
            let offer: [String] = [
                e.offer.map { String($0.type) } ?? "", e.offer?.identifier ?? "", e.offer?.discountType ?? "", e.offer?.period ?? "",
                e.commissionRate.map(String.init) ?? "", e.proceedsMicros.map(String.init) ?? "",
            ]
            let fields = identity + money + offer
            lines.append(fields.map(CSVField.quote).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
