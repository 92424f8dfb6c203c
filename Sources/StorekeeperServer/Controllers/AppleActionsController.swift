import AppStoreClient
import AppStoreCrypto
import AppStoreModels
import Foundation
import Hummingbird
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Operator routes that act at Apple on one customer's purchase, through the app's App Store
/// Server API key: the calls Apple added in 2025-2026 (App Store Server API 1.20). Each takes
/// any kind of transaction id Apple takes, and `?environment=` when the caller knows it;
/// otherwise production is asked first and the sandbox when production does not know the id.
/// Apple's refusals keep Apple's error code in the message, so an operator can look it up.
struct AppleActionsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        registerMassExtension(on: router)
        let transactions = router.admin("v1/admin/apps/:app/transactions")
        transactions.post(":transactionId/finish") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let id = try transactionId(ctx, "transactionId")
            let environment = try await context.apple(placement) { try await client.finishTransaction(id, in: placement) }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "finish_transaction", "app": app.id])
            return try StorekeeperJSON.response(
                ActionAnswer(transactionId: id, environment: environment.storageName, finished: true))
        }
        transactions.put(":transactionId/app-account-token") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let id = try transactionId(ctx, "transactionId")
            let token = try await accountToken(request)
            let environment = try await context.apple(placement) { try await client.setAppAccountToken(id, token, in: placement) }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "set_app_account_token", "app": app.id])
            return try StorekeeperJSON.response(
                ActionAnswer(originalTransactionId: id, environment: environment.storageName, appAccountToken: token))
        }
        transactions.put(":transactionId/consumption") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let id = try transactionId(ctx, "transactionId")
            let body = try await consumption(request)
            let environment = try await context.apple(placement) { try await client.sendConsumptionInformation(id, body, in: placement) }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "send_consumption", "app": app.id])
            return try StorekeeperJSON.response(
                ActionAnswer(transactionId: id, environment: environment.storageName, consumptionSent: true), status: .accepted)
        }
        transactions.get(":transactionId/app-transaction") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let id = try transactionId(ctx, "transactionId")
            let (answer, environment) = try await context.apple(placement) { try await client.appTransactionInfo(id, in: placement) }
            guard let signed = answer.signedAppTransactionInfo else {
                throw StorekeeperError(.appleUnavailable, "Apple answered without a signed app transaction")
            }
            let payload = try await verified(signed, kind: .appTransaction, app: app, environment: environment, what: "signed app transaction")
            return try StorekeeperJSON.response(AppTransactionAnswer(environment: environment.storageName, appTransaction: payload))
        }
        transactions.get(":transactionId/refunds") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let id = try transactionId(ctx, "transactionId", digits: 20)
            // Apple pages by revision; a customer's refunds are few, so every page is read, up to
            // a bound that keeps a misbehaving answer from holding the request.
            var signed: [String] = []
            var revision: String?
            var environment = AppStoreEnvironment.production
            for _ in 0..<Self.maximumRefundPages {
                let (page, answered) = try await context.apple(placement) {
                    try await client.refundHistory(id, revision: revision, in: revision == nil ? placement : .only(environment))
                }
                environment = answered
                signed += page.signedTransactions ?? []
                guard page.hasMore == true, let next = page.revision, next != revision else { break }
                revision = next
            }
            var refunds: [JSONValue] = []
            for jws in signed { refunds.append(try await verified(jws, app: app, environment: environment, what: "refunded transaction")) }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "refund_history", "app": app.id])
            return try StorekeeperJSON.response(RefundsAnswer(transactionId: id, environment: environment.storageName, refunds: refunds))
        }
        router.admin("v1/admin/apps/:app/orders").get(":orderId") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let orderId = try ctx.parameters.decoded("orderId")
            // Apple's order ids (on the customer's invoice) are letters and digits.
            guard (1...40).contains(orderId.utf8.count), orderId.utf8.allSatisfy({ Self.isLetterOrDigit($0) }) else {
                throw StorekeeperError(.invalidRequest, "orderId must be an App Store order id (up to 40 letters and digits)")
            }
            let (answer, environment) = try await context.apple(placement) { try await client.lookUpOrder(orderId, in: placement) }
            var transactions: [JSONValue] = []
            for jws in answer.signedTransactions ?? [] {
                transactions.append(try await verified(jws, app: app, environment: environment, what: "order's transaction"))
            }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "order_lookup", "app": app.id])
            // Apple's status 0 is a valid order; any other (1: invalid) is an order it does not know.
            let valid = answer.status == 0
            return try StorekeeperJSON.response(
                OrderAnswer(orderId: orderId, environment: environment.storageName, valid: valid, transactions: transactions))
        }
        router.admin("v1/admin/apps/:app/subscriptions").put(":originalTransactionId/renewal-extension") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let id = try transactionId(ctx, "originalTransactionId", digits: 20)
            let extension_ = try await renewalExtension(request)
            let environment = Self.single(placement)
            let answer = try await context.apple(.only(environment)) { try await client.extendRenewalDate(id, extension_, environment: environment) }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "extend_renewal_date", "app": app.id])
            return try StorekeeperJSON.response(
                ExtensionAnswer(
                    originalTransactionId: answer.originalTransactionId ?? id, environment: environment.storageName,
                    requestIdentifier: extension_.requestIdentifier, extended: answer.success == true,
                    webOrderLineItemId: answer.webOrderLineItemId,
                    effectiveDate: StoredTime.date(answer.effectiveDate)))
        }
    }

    static let maximumRefundPages = 20

    /// Extend Subscription Renewal Dates for All Active Subscribers, and its status. Apple
    /// answers the request at once and works through the subscribers later; the operator polls
    /// the status (its `complete`, `succeededCount` and `failedCount`) with the same request
    /// identifier, which also makes a retried request idempotent at Apple.
    private func registerMassExtension(on router: RouteTable) {
        let products = router.admin("v1/admin/apps/:app/products")
        products.post(":productId/renewal-extension") { request, ctx in
            let (app, client, placement) = try context.appleCall(request, ctx)
            let productId = try await subscriptionProduct(app, ctx)
            struct Body: Decodable {
                var extendByDays: Int
                var extendReasonCode: Int
                var requestIdentifier: String
                var storefrontCountryCodes: [String]?
            }
            let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
            var problems = Self.extensionProblems(
                days: body.extendByDays, reason: body.extendReasonCode, requestIdentifier: body.requestIdentifier)
            if let codes = body.storefrontCountryCodes,
                codes.isEmpty || codes.count > 300
                    || !codes.allSatisfy({ $0.utf8.count == 3 && $0.utf8.allSatisfy { (0x41...0x5A).contains($0) } })
            {
                problems.append("storefrontCountryCodes must be 1 to 300 ISO 3166-1 alpha-3 codes (USA, FRA, ...)")
            }
            guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
            let environment = Self.single(placement)
            let answer = try await context.apple(.only(environment)) {
                try await client.extendRenewalDates(
                    MassExtendRenewalDateRequest(
                        extendByDays: body.extendByDays, extendReasonCode: body.extendReasonCode,
                        requestIdentifier: body.requestIdentifier, productId: productId, storefrontCountryCodes: body.storefrontCountryCodes),
                    environment: environment)
            }
            context.metrics.increment(Metric.appleActionsTotal, labels: ["action": "extend_renewal_dates", "app": app.id])
            return try StorekeeperJSON.response(
                MassExtensionAnswer(
                    productId: productId, environment: environment.storageName,
                    requestIdentifier: answer.requestIdentifier ?? body.requestIdentifier, complete: false),
                status: .accepted)
        }
        products.get(":productId/renewal-extension/:requestIdentifier") { request, ctx in
            let (_, client, placement) = try context.appleCall(request, ctx)
            let productId = try ctx.parameters.decoded("productId")
            let identifier = try ctx.parameters.decoded("requestIdentifier")
            guard UUID(uuidString: identifier) != nil else { throw StorekeeperError(.invalidRequest, "requestIdentifier must be a UUID") }
            let environment = Self.single(placement)
            let status = try await context.apple(.only(environment)) {
                try await client.massExtensionStatus(productId: productId, requestIdentifier: identifier, environment: environment)
            }
            return try StorekeeperJSON.response(
                MassExtensionAnswer(
                    productId: productId, environment: environment.storageName, requestIdentifier: status.requestIdentifier ?? identifier,
                    complete: status.complete == true, completeDate: StoredTime.date(status.completeDate),
                    succeededCount: status.succeededCount, failedCount: status.failedCount))
        }
    }

    /// Apple's extension calls name one environment: the one asked for, else production.
    static func single(_ placement: AppStoreServerAPIClient.Placement) -> AppStoreEnvironment {
        if case .only(let chosen) = placement { chosen } else { .production }
    }

    static func extensionProblems(days: Int, reason: Int, requestIdentifier: String) -> [String] {
        var problems: [String] = []
        if !(1...90).contains(days) { problems.append("extendByDays must be from 1 to 90") }
        if !(0...3).contains(reason) {
            problems.append("extendReasonCode must be 0 (undeclared), 1 (customer satisfaction), 2 (other) or 3 (service issue or outage)")
        }
        if UUID(uuidString: requestIdentifier) == nil { problems.append("requestIdentifier must be a UUID") }
        return problems
    }

    /// A product of the app's catalog that renews: extending anything else means nothing at Apple,
    /// so any other product id is, for this route, a subscription that does not exist.
    private func subscriptionProduct(_ app: AppConfiguration, _ ctx: AdminRequestContext) async throws -> String {
        let productId = try ctx.parameters.decoded("productId")
        guard let product = try await context.useCases.catalog.products(appId: app.id).first(where: { $0.productId == productId }) else {
            throw StorekeeperError(.notFound, "no product '\(productId)' in app '\(app.id)'")
        }
        guard product.type == .autoRenewable else {
            throw StorekeeperError(
                .notFound, "no auto-renewable subscription '\(productId)' in app '\(app.id)' (it is \(product.type.rawValue))")
        }
        return productId
    }

    static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// Apple's answer is believed only once verified, like every other signed payload: its
    /// signature and chain, and that it is this app's in the environment that answered.
    private func verified(
        _ signed: String, kind: AppTrust.Kind = .transaction, app: AppConfiguration, environment: AppStoreEnvironment, what: String
    ) async throws -> JSONValue {
        switch await context.signedTransactionGate.trusted(signed, kind: kind, app: app, expectedEnvironment: environment, now: context.now()) {
        case .success(let verdict):
            guard let payload = verdict.json else { throw StorekeeperError(.appleUnavailable, "Apple's \(what) is not JSON") }
            return payload
        case .failure(let refusal):
            throw StorekeeperError(.appleUnavailable, "Apple's \(what) did not verify: \(refusal.reason.rawValue): \(refusal.message)")
        }
    }

    /// `{"extendByDays": 1-90, "extendReasonCode": 0-3, "requestIdentifier": "<UUID>"}`, checked
    /// here so a mistake is a 400 naming the field. The request identifier makes a retry
    /// idempotent at Apple: send the same one again after a timeout, never a new one.
    private func renewalExtension(_ request: Request) async throws -> ExtendRenewalDateRequest {
        let body = try StorekeeperJSON.decode(ExtendRenewalDateRequest.self, from: try await context.body(request))
        let problems = Self.extensionProblems(days: body.extendByDays, reason: body.extendReasonCode, requestIdentifier: body.requestIdentifier)
        guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
        return body
    }

    struct ActionAnswer: Encodable {
        var transactionId: String?
        var originalTransactionId: String?
        var environment: String
        var finished: Bool?
        var appAccountToken: String?
        var consumptionSent: Bool?
    }

    struct RefundsAnswer: Encodable {
        var transactionId: String
        var environment: String
        /// Apple's refunded transactions, decoded and verified, oldest refund first as Apple
        /// lists them; every field kept.
        var refunds: [JSONValue]
    }

    struct OrderAnswer: Encodable {
        var orderId: String
        var environment: String
        var valid: Bool
        var transactions: [JSONValue]
    }

    struct ExtensionAnswer: Encodable {
        var originalTransactionId: String
        var environment: String
        var requestIdentifier: String
        var extended: Bool
        var webOrderLineItemId: String?
        /// The subscription's new expiry, as Apple gave it.
        var effectiveDate: Date?
    }

    struct MassExtensionAnswer: Encodable {
        var productId: String
        var environment: String
        var requestIdentifier: String
        var complete: Bool
        var completeDate: Date?
        var succeededCount: Int64?
        var failedCount: Int64?
    }

    struct AppTransactionAnswer: Encodable {
        var environment: String
        /// Apple's decoded app transaction, every field as Apple sent it (`appTransactionId`,
        /// `originalPlatform`, …); unknown ones kept.
        var appTransaction: JSONValue
    }

    /// Apple's transaction ids (original, renewal and app transaction ids alike) are decimal
    /// digits; anything else is refused here rather than sent to Apple. Calls that take only a
    /// transaction id (not an app transaction id) take at most 20 digits, as Apple does (a 64-bit
    /// number); a longer one is refused here, not by Apple.
    private func transactionId(_ ctx: AdminRequestContext, _ name: String, digits: Int = 40) throws -> String {
        let id = try ctx.parameters.decoded(name)
        guard (1...digits).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw StorekeeperError(.invalidRequest, "\(name) must be an App Store transaction id (up to \(digits) decimal digits)")
        }
        return id
    }

    /// `{"appAccountToken": "<UUID>"}`, or `{"appUserId": "…"}` for the token StorekeeperKit
    /// derives for that user: setting it binds an older purchase to the user, so a later
    /// StoreKit 2 post of it passes the token check.
    private func accountToken(_ request: Request) async throws -> String {
        struct Body: Decodable {
            var appAccountToken: String?
            var appUserId: String?
        }
        let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
        switch (body.appAccountToken, body.appUserId) {
        case (let token?, nil):
            guard let uuid = UUID(uuidString: token) else {
                throw StorekeeperError(.invalidRequest, "appAccountToken must be a UUID")
            }
            return uuid.uuidString.lowercased()
        case (nil, let user?):
            try validateAppUserId(user)
            return AppAccountToken.derive(appUserId: user)
        default:
            throw StorekeeperError(.invalidRequest, "send exactly one of appAccountToken and appUserId")
        }
    }

    /// Apple's v2 consumption body, checked here so a mistake is a 400 naming the field rather
    /// than a refusal from Apple later.
    private func consumption(_ request: Request) async throws -> ConsumptionRequestV2 {
        let body = try StorekeeperJSON.decode(ConsumptionRequestV2.self, from: try await context.body(request))
        var problems: [String] = []
        if !body.customerConsented { problems.append("customerConsented must be true: Apple takes the data only with consent") }
        if body.sampleContentProvided == nil { problems.append("sampleContentProvided is required") }
        if let status = body.deliveryStatus {
            if !ConsumptionRequestV2.deliveryStatuses.contains(status) {
                problems.append("deliveryStatus must be one of \(ConsumptionRequestV2.deliveryStatuses.sorted().joined(separator: ", "))")
            }
        } else {
            problems.append("deliveryStatus is required")
        }
        if let share = body.consumptionPercentage, !(0...100_000).contains(share) {
            problems.append("consumptionPercentage must be from 0 to 100000 (milliunits of a percent)")
        }
        if let preference = body.refundPreference, !ConsumptionRequestV2.refundPreferences.contains(preference) {
            problems.append("refundPreference must be one of \(ConsumptionRequestV2.refundPreferences.sorted().joined(separator: ", "))")
        }
        guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
        return body
    }
}
