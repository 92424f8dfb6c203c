import Foundation
import Hummingbird
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Operators' routes over verifications: listed by state, requeued, a subscriber refreshed from
/// the App Store Server API, and Apple's health as this process's workers see it.
struct VerificationAdminController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin")
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
            guard let record = try await context.useCases.verifications.verification(id: id, appId: nil) else {
                throw StorekeeperError(.notFound, "no verification '\(id)'")
            }
            return try StorekeeperJSON.response(context.view(record), status: .accepted)
        }
        admin.post("apps/:app/users/:appUserId/refresh") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await refresh(request, ctx, app: app, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        admin.get("apple-health") { request, _ in
            return try StorekeeperJSON.response(AppleHealthView(context.appleHealth?.snapshot() ?? [], now: context.now()))
        }
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
        let verification = try await context.waitForFinal(result.verification, seconds: wait)
        return try StorekeeperJSON.response(
            context.view(verification), status: verification.state.isFinal ? .ok : .accepted,
            headers: [.location: "/v1/verifications/\(verification.id)"])
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
}
