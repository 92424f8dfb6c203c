import Foundation
import Hummingbird
import JobQueue
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Anonymous ids linked to the known user they became (`logIn`; docs/IDENTITY.md). Only
/// translation: `ManageIdentity` decides.
struct IdentityController {
    let context: ServerContext

    func register(on router: RouteTable) {
        router.callers("v1").post("subscribers/:appUserId/aliases") { request, ctx in
            try await logIn(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
    }

    /// Links `anonymousId` to the known user of the path, whom the caller must speak for (the
    /// app's backend, or the app with that user's token). Knowing the anonymous id is the proof
    /// that its purchases are this person's: StorekeeperKit makes it at random and keeps it on
    /// the device, and a known user's id is never accepted in its place.
    func logIn(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        if case .client(_, nil) = caller {
            throw StorekeeperError(.userTokenRequired, "signing in needs the user token of the known user in 'Storekeeper-User-Token'")
        }
        let user = try await context.identify(caller, appUserId)
        let data = try await context.body(request)
        try AdminInput.refuseFields(data, except: ["anonymousId"], note: nil)
        let anonymousId = try StorekeeperJSON.decode(LogInRequest.self, from: data).anonymousId
        let app = caller.app
        let outcome = try await context.useCases.identity.logIn(
            appId: app.id, anonymousId: anonymousId, appUserId: user, policy: app.logInPolicy, now: context.now())
        let (name, transactions): (LogInAnswer.Outcome, [String])
        switch outcome {
        case .invalid(let problem): throw StorekeeperError(.invalidRequest, problem)
        case .tooManyAliases(let most):
            throw StorekeeperError(.conflict, "this user has \(most) anonymous ids linked, the most allowed: nothing linked")
        case .linked(.linkedElsewhere): throw StorekeeperError(.conflict, "that anonymous id is linked to another user")
        case .linked(.alreadyLinked): (name, transactions) = (.alreadyLinked, [])
        case .linked(.linked(let moved)): (name, transactions) = (.linked, moved.map(\.transactionId))
        case .linked(.keptWithAnonymous(let owned)): (name, transactions) = (.keptWithAnonymous, owned.map(\.transactionId))
        }
        let aliases = try await context.useCases.identity.aliases(appId: app.id, appUserId: user)
        return try StorekeeperJSON.response(LogInAnswer(appUserId: user, outcome: name, transactionIds: transactions.sorted(), aliases: aliases))
    }
}
