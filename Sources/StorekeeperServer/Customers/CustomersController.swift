import AppStoreModels
import Foundation
import Hummingbird
import JobQueue
import NIOCore
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// A customer's own data: attributes set by the app's backend (any user) or the app (its own
/// user, proven by a user token), and an operator's deletion of a customer. Only translation:
/// `ManageCustomers` decides.
struct CustomersController {
    let context: ServerContext

    func register(on router: RouteTable) {
        router.callers("v1").patch("subscribers/:appUserId/attributes") { request, ctx in
            try await updateAttributes(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        router.callers("v1").post("subscribers/:appUserId/app-transaction") { request, ctx in
            try await postAppTransaction(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        router.callers("v1").post("subscribers/:appUserId/customer-center-actions") { request, ctx in
            try await postCustomerCenterAction(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        router.admin("v1/admin/apps/:app").delete("subscribers/:appUserId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            let actor = try AdminInput.actor(request, ctx)
            guard let deletion = try await context.useCases.customers.delete(appId: app.id, appUserId: appUserId, actor: actor, now: context.now())
            else { throw StorekeeperError(.notFound, "nothing is stored of that user") }
            return try StorekeeperJSON.response(deletion)
        }
        registerSuspension(on: router.admin("v1/admin/apps/:app"))
    }

    /// An operator withholds a subscriber's access (fraud, a dispute) or lifts a suspension, a
    /// parent's withdrawn consent's included.
    private func registerSuspension(on admin: RouterGroup<AdminRequestContext>) {
        admin.put("subscribers/:appUserId/suspension") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            let actor = try AdminInput.actor(request, ctx)
            let data = try await context.body(request)
            try AdminInput.refuseFields(data, except: ["reason"], note: nil)
            struct Body: Decodable { var reason: String }
            let reason = try StorekeeperJSON.decode(Body.self, from: data).reason
            guard (1...1000).contains(reason.unicodeScalars.count) else { throw StorekeeperError(.invalidRequest, "reason: 1-1000 characters") }
            let changed = try await context.useCases.customers.suspend(
                appId: app.id, appUserId: appUserId, reason: reason, actor: actor, cause: nil, now: context.now())
            let suspension = try await context.useCases.customers.suspension(appId: app.id, appUserId: appUserId)
            return try StorekeeperJSON.response(suspension, status: changed ? .created : .ok)
        }
        admin.delete("subscribers/:appUserId/suspension") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            guard
                try await context.useCases.customers.restore(
                    appId: app.id, appUserId: appUserId, actor: try AdminInput.actor(request, ctx), now: context.now())
            else { throw StorekeeperError(.notFound, "that user's access is not suspended") }
            return Response(status: .noContent)
        }
    }

    /// `{"signedAppTransaction": "<JWS>"}`: the device's app transaction, kept on the customer
    /// once it verifies as Apple's for this app. Whoever may act for the user may post it (an
    /// anonymous id's follows them when they log in); it proves how the app was obtained, not
    /// who the user is, so it grants nothing by itself.
    func postAppTransaction(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let appUserId = try await context.identify(caller, appUserId)
        let data = try await context.body(request)
        let body = try StorekeeperJSON.decode(AppTransactionSubmission.self, from: data)
        let stored = try await context.useCases.appTransactions(
            appId: caller.app.id, appUserId: appUserId, signed: body.signedAppTransaction,
            verifier: GateAppTransactions(gate: context.signedTransactionGate, app: caller.app), now: context.now())
        return try StorekeeperJSON.response(AppTransactionInfo(stored))
    }

    /// The app reports a customer-center action of its user, who must have bought something; the
    /// transaction it names must be theirs (404 otherwise, as for one that does not exist).
    func postCustomerCenterAction(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let appUserId = try await context.identify(caller, appUserId)
        let data = try await context.body(request)
        try AdminInput.refuseFields(data, except: ["id", "action", "transactionId", "outcome"], note: nil)
        let body = try StorekeeperJSON.decode(CustomerCenterActionReport.self, from: data)
        guard let kind = CustomerCenterAction.Kind(rawValue: body.action) else {
            throw StorekeeperError(.invalidRequest, "action: manage_subscriptions_shown or refund_requested")
        }
        var outcome: CustomerCenterAction.Outcome?
        if let sent = body.outcome {
            guard let known = CustomerCenterAction.Outcome(rawValue: sent) else {
                throw StorekeeperError(.invalidRequest, "outcome: requested or cancelled")
            }
            outcome = known
        }
        let action = CustomerCenterAction(id: body.id, kind: kind, transactionId: body.transactionId, outcome: outcome)
        let problems = action.problems
        guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
        guard let event = try await context.useCases.customerCenter(appId: caller.app.id, appUserId: appUserId, action, now: context.now()) else {
            throw StorekeeperError(.notFound, "no such transaction of this user (or none at all)")
        }
        return try StorekeeperJSON.response(CustomerCenterActionRecorded(eventId: event.id, type: event.type.rawValue))
    }

    /// A merge patch: a field sent sets it, `null` clears it, a field left out stays; `custom`
    /// likewise key by key.
    func updateAttributes(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let appUserId = try await context.identify(caller, appUserId)
        if case .client(_, nil) = caller {
            // Personal data about a user: only a user token can say whose it is.
            throw StorekeeperError(.userTokenRequired, "attributes from the app need a user token in 'Storekeeper-User-Token'")
        }
        let data = try await context.body(request)
        let change = try Self.change(Data(data.readableBytesView))
        switch try await context.useCases.customers.update(appId: caller.app.id, appUserId: appUserId, change: change, now: context.now()) {
        case .success(let attributes):
            return try StorekeeperJSON.response(Subscriber.SubscriberAttributes(attributes))
        case .failure(let refused): throw StorekeeperError(.invalidRequest, refused.problems.joined(separator: "; "))
        }
    }

    static func change(_ data: Data) throws -> AttributeChange {
        guard let parsed = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else {
            throw StorekeeperError(.invalidJSON, "body is not JSON")
        }
        guard let object = parsed as? [String: Any] else { throw StorekeeperError(.invalidRequest, "body: a JSON object") }
        if let extra = object.keys.sorted().first(where: { !["email", "displayName", "custom"].contains($0) }) {
            throw StorekeeperError(.invalidRequest, "\(extra): unknown field (email, displayName, custom)")
        }
        let patch: AttributesPatch
        do {
            patch = try WireJSON.makeDecoder().decode(AttributesPatch.self, from: data)
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let path = context.codingPath.map { String($0.stringValue.prefix(64)) }.joined(separator: ".")
            throw StorekeeperError(.invalidRequest, path == "custom" ? "custom: an object of strings or nulls" : "\(path): a string or null")
        } catch {
            throw StorekeeperError(.invalidRequest, "body: email, displayName and custom, each a string or null")
        }
        func field(_ field: AttributesPatch.Field<String>) -> AttributeChange.Field {
            switch field {
            case .keep: .keep
            case .clear: .clear
            case .set(let value): .set(value)
            }
        }
        var change = AttributeChange(email: field(patch.email), displayName: field(patch.displayName))
        switch patch.custom {
        case .keep: break
        case .clear: change.clearCustom = true
        case .set(let entries): change.custom = entries
        }
        return change
    }
}
