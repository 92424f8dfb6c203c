import Foundation
import Hummingbird
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Operator routes that give or end access without a purchase.
/// Only translation: `ManagePromotionalGrants` decides.
struct PromotionalGrantsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin/apps/:app")
        admin.post("subscribers/:appUserId/promotional-grants") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            struct Body: Decodable {
                var entitlementId: String
                /// ISO 8601; absent or null: for life.
                var duration: String?
                var actor: String
                var reason: String
                var grantId: String?
            }
            let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
            let outcome = try await context.useCases.promotionalGrants.grant(
                ManagePromotionalGrants.GrantRequest(
                    appId: app.id, appUserId: appUserId, entitlementId: body.entitlementId, duration: body.duration,
                    actor: try AdminInput.actor(request, ctx, declared: body.actor),
                    reason: body.reason, grantId: body.grantId),
                now: context.now())
            switch outcome {
            case .granted(let grant, let created):
                return try StorekeeperJSON.response(grant, status: created ? .created : .ok)
            case .invalid(let problems): throw StorekeeperError(.invalidRequest, problems.joined(separator: "; "))
            case .unknownEntitlement: throw StorekeeperError(.notFound, "no entitlement '\(body.entitlementId)' in app '\(app.id)'")
            case .conflict(let stored):
                throw StorekeeperError(.conflict, "grant '\(stored.id)' exists for another user or entitlement")
            }
        }
        admin.get("subscribers/:appUserId/promotional-grants") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            return try StorekeeperJSON.response(
                ["grants": try await context.useCases.promotionalGrants.grants(appId: app.id, appUserId: appUserId)])
        }
        admin.post("promotional-grants/:grantId/revoke") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let grantId = try ctx.parameters.decoded("grantId")
            struct Body: Decodable {
                var actor: String
                var reason: String
            }
            let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
            switch try await context.useCases.promotionalGrants.revoke(
                appId: app.id, grantId: grantId, actor: try AdminInput.actor(request, ctx, declared: body.actor), reason: body.reason,
                now: context.now())
            {
            case .revoked(let grant, _):
                return try StorekeeperJSON.response(grant)
            case .alreadyEnded(let grant):
                throw StorekeeperError(.conflict, "grant '\(grant.id)' ended on its own; nothing to revoke")
            case .notFound: throw StorekeeperError(.notFound, "no promotional grant '\(grantId)'")
            case .invalid(let problems): throw StorekeeperError(.invalidRequest, problems.joined(separator: "; "))
            }
        }
    }
}
