import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Spending a user's credits and reading their history. The app's backend may spend for any
/// user; the app itself only with a user token for that user, and only where the app's
/// `client.spendCredits` allows it. Only translation: `ManageCredits` decides.
struct CreditsController {
    let context: ServerContext

    static let idempotencyKeyHeader = HTTPField.Name("Idempotency-Key")!
    static let pageLimit = 1_000

    func register(on router: RouteTable) {
        let subscriber = router.callers("v1/subscribers/:appUserId/credits")
        subscriber.post("spend") { request, ctx in try await spend(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId")) }
        subscriber.get { request, ctx in try await history(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId")) }
    }

    func spend(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        if case .client(let app, let token) = caller {
            guard app.client?.spendCredits == true else {
                throw StorekeeperError(.clientKeyNotAllowed, "app '\(app.id)' spends credits from its backend only (client.spendCredits is off)")
            }
            guard token != nil else { throw StorekeeperError(.userTokenRequired, "spending credits from the app needs a user token") }
        }
        let user = try await context.identify(caller, appUserId)
        let data = try await context.body(request)
        try AdminInput.refuseFields(data, except: ["amount", "reason"], note: nil)
        let body = try StorekeeperJSON.decode(CreditSpendRequest.self, from: data)
        let outcome = try await context.useCases.credits.spend(
            ManageCredits.SpendRequest(
                appId: caller.app.id, appUserId: user, key: request.headers[Self.idempotencyKeyHeader], amount: body.amount, reason: body.reason),
            now: context.now())
        switch outcome {
        case .spent(let spend, let replayed):
            return try StorekeeperJSON.response(CreditSpendAnswer(spend: CreditSpendEntry(spend), balance: spend.balanceAfter, replayed: replayed))
        case .invalid(let problems): throw StorekeeperError(.invalidRequest, problems.joined(separator: "; "))
        case .insufficient(let balance):
            throw StorekeeperError(
                .insufficientCredits, "the balance is \(balance) credits: \(body.amount ?? 0) cannot be spent", cause: CreditBalance(balance: balance)
            )
        case .keyReused:
            throw StorekeeperError(.idempotencyKeyReused, "this Idempotency-Key was used for another spend; use a new key for a new spend")
        }
    }

    func history(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let user = try await context.identify(caller, appUserId)
        let query = QueryInput(request)
        let limit = try query.integer("limit", in: 1...Self.pageLimit) ?? 100
        let before = try query.integer("before", in: 1...Int.max).map(Int64.init)
        let history = try await context.useCases.credits.history(appId: caller.app.id, appUserId: user, before: before, limit: limit)
        let answer = CreditHistory(
            appUserId: user, balance: history.balance, purchased: history.purchased, spent: history.spent,
            spends: history.spends.map { CreditSpendEntry($0.spend) },
            nextBefore: history.spends.count == limit ? history.spends.last?.cursor : nil)
        return try StorekeeperJSON.response(answer)
    }
}

extension CreditSpendEntry {
    init(_ spend: StorekeeperDomain.CreditSpend) {
        self.init(
            id: spend.id, appUserId: spend.appUserId, amount: spend.amount, reason: spend.reason, spentAt: spend.spentAt,
            balanceAfter: spend.balanceAfter)
    }
}
