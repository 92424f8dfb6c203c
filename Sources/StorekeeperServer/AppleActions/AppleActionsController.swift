import AppStoreModels
import Foundation
import Hummingbird
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Operator routes that act at Apple on one customer's purchase, through the app's App Store
/// Server API key (`ActAtApple`: the checks, the paging, the environment, the verification of
/// Apple's signed answers). Each takes any kind of transaction id Apple takes, and
/// `?environment=` when the caller knows it; otherwise production is asked first and the
/// sandbox when production does not know the id. Apple's refusals keep Apple's error code in
/// the message, so an operator can look it up. Only translation and the action's count.
struct AppleActionsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        registerMassExtension(on: router)
        let transactions = router.admin("v1/admin/apps/:app/transactions")
        transactions.post(":transactionId/finish") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let id = try ctx.parameters.decoded("transactionId")
            let environment = try await actions.finish(transactionId: id, in: placement)
            context.countAppleAction("finish_transaction", app)
            return try StorekeeperJSON.response(ActionAnswer(transactionId: id, environment: environment.storageName, finished: true))
        }
        transactions.put(":transactionId/app-account-token") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let id = try ctx.parameters.decoded("transactionId")
            let (token, environment) = try await actions.setAppAccountToken(
                originalTransactionId: id, token: try await accountToken(request), in: placement)
            context.countAppleAction("set_app_account_token", app)
            return try StorekeeperJSON.response(ActionAnswer(originalTransactionId: id, environment: environment.storageName, appAccountToken: token))
        }
        transactions.put(":transactionId/consumption") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let id = try ctx.parameters.decoded("transactionId")
            let body = try StorekeeperJSON.decode(ConsumptionRequestV2.self, from: try await context.body(request))
            let environment = try await actions.sendConsumption(transactionId: id, body, in: placement)
            context.countAppleAction("send_consumption", app)
            return try StorekeeperJSON.response(
                ActionAnswer(transactionId: id, environment: environment.storageName, consumptionSent: true), status: .accepted)
        }
        transactions.get(":transactionId/app-transaction") { request, ctx in
            let (_, actions, placement) = try context.appleActions(request, ctx)
            let (payload, environment) = try await actions.appTransaction(
                transactionId: try ctx.parameters.decoded("transactionId"), in: placement, now: context.now())
            return try StorekeeperJSON.response(AppTransactionAnswer(environment: environment.storageName, appTransaction: payload))
        }
        transactions.get(":transactionId/refunds") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let id = try ctx.parameters.decoded("transactionId")
            let (refunds, environment) = try await actions.refunds(transactionId: id, in: placement, now: context.now())
            context.countAppleAction("refund_history", app)
            return try StorekeeperJSON.response(RefundsAnswer(transactionId: id, environment: environment.storageName, refunds: refunds))
        }
        router.admin("v1/admin/apps/:app/orders").get(":orderId") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let orderId = try ctx.parameters.decoded("orderId")
            let (valid, transactions, environment) = try await actions.order(orderId: orderId, in: placement, now: context.now())
            context.countAppleAction("order_lookup", app)
            return try StorekeeperJSON.response(
                OrderAnswer(orderId: orderId, environment: environment.storageName, valid: valid, transactions: transactions))
        }
        router.admin("v1/admin/apps/:app/subscriptions").put(":originalTransactionId/renewal-extension") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let id = try ctx.parameters.decoded("originalTransactionId")
            let body = try StorekeeperJSON.decode(ExtendRenewalDateRequest.self, from: try await context.body(request))
            let (answer, environment) = try await actions.extendRenewal(originalTransactionId: id, body, in: placement)
            context.countAppleAction("extend_renewal_date", app)
            return try StorekeeperJSON.response(
                ExtensionAnswer(
                    originalTransactionId: answer.originalTransactionId ?? id, environment: environment.storageName,
                    requestIdentifier: body.requestIdentifier, extended: answer.success == true, webOrderLineItemId: answer.webOrderLineItemId,
                    effectiveDate: StoredTime.date(answer.effectiveDate)))
        }
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers, and its status. Apple
    /// answers the request at once and works through the subscribers later; the operator polls
    /// the status (its `complete`, `succeededCount` and `failedCount`) with the same request
    /// identifier, which also makes a retried request idempotent at Apple.
    private func registerMassExtension(on router: RouteTable) {
        let products = router.admin("v1/admin/apps/:app/products")
        products.post(":productId/renewal-extension") { request, ctx in
            let (app, actions, placement) = try context.appleActions(request, ctx)
            let productId = try ctx.parameters.decoded("productId")
            struct Body: Decodable {
                var extendByDays: Int
                var extendReasonCode: Int
                var requestIdentifier: String
                var storefrontCountryCodes: [String]?
            }
            let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
            let (answer, environment) = try await actions.extendRenewals(
                MassExtendRenewalDateRequest(
                    extendByDays: body.extendByDays, extendReasonCode: body.extendReasonCode, requestIdentifier: body.requestIdentifier,
                    productId: productId, storefrontCountryCodes: body.storefrontCountryCodes),
                in: placement)
            context.countAppleAction("extend_renewal_dates", app)
            return try StorekeeperJSON.response(
                MassExtensionAnswer(
                    productId: productId, environment: environment.storageName, requestIdentifier: answer.requestIdentifier ?? body.requestIdentifier,
                    complete: false),
                status: .accepted)
        }
        products.get(":productId/renewal-extension/:requestIdentifier") { request, ctx in
            let (_, actions, placement) = try context.appleActions(request, ctx)
            let productId = try ctx.parameters.decoded("productId")
            let identifier = try ctx.parameters.decoded("requestIdentifier")
            let (status, environment) = try await actions.extensionStatus(productId: productId, requestIdentifier: identifier, in: placement)
            return try StorekeeperJSON.response(
                MassExtensionAnswer(
                    productId: productId, environment: environment.storageName, requestIdentifier: status.requestIdentifier ?? identifier,
                    complete: status.complete == true, completeDate: StoredTime.date(status.completeDate),
                    succeededCount: status.succeededCount, failedCount: status.failedCount))
        }
    }

    /// `{"appAccountToken": "<UUID>"}`, or `{"appUserId": "…"}` for the token StorekeeperKit
    /// derives for that user.
    private func accountToken(_ request: Request) async throws -> String {
        struct Body: Decodable {
            var appAccountToken: String?
            var appUserId: String?
        }
        let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
        switch (body.appAccountToken, body.appUserId) {
        case (let token?, nil):
            return token
        case (nil, let user?):
            try validateAppUserId(user)
            return AppAccountToken.derive(appUserId: user)
        default:
            throw StorekeeperError(.invalidRequest, "send exactly one of appAccountToken and appUserId")
        }
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
}
