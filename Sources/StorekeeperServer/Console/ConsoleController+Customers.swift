import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import Logging
import Persistence
import StorekeeperConsole
import StorekeeperCore
import StorekeeperDomain

/// A customer's page's actions (admin only, each with the session's CSRF token): promotional
/// access granted or revoked in the operator's name (recorded with its audit entry and events by
/// `ManagePromotionalGrants`), and a refresh from the App Store Server API.
extension ConsoleController {
    func registerCustomerActions(on actions: RouterGroup<ConsoleRequestContext>) {
        actions.post("apps/:app/customers/:id/promotional-grants") { request, ctx in
            let session = ctx.session
            let text = ctx.form
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try await context.useCases.identity.resolve(appId: app.id, appUserId: try ctx.parameters.decoded("id"))
            let form = Self.decodeForm(GrantForm.self, text)
            let duration = form?.duration.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
            let outcome = try await context.useCases.promotionalGrants.grant(
                ManagePromotionalGrants.GrantRequest(
                    appId: app.id, appUserId: id, entitlementId: form?.entitlementId ?? "", duration: duration,
                    actor: ctx.actor, reason: form?.reason ?? "", grantId: nil),
                now: context.now())
            let notice: String =
                switch outcome {
                case .granted(let grant, _): "Granted \(grant.entitlementId) (\(grant.id))."
                case .invalid(let problems): "Not granted: \(problems.joined(separator: "; "))."
                case .unknownEntitlement: "Not granted: no such entitlement."
                case .conflict: "Not granted: the grant id is taken."
                }
            return customerRedirect(app.id, id, notice, session)
        }
        actions.post("apps/:app/promotional-grants/:grantId/revoke") { request, ctx in
            let session = ctx.session
            let text = ctx.form
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let grantId = try ctx.parameters.decoded("grantId")
            let form = Self.decodeForm(RevokeForm.self, text)
            let outcome = try await context.useCases.promotionalGrants.revoke(
                appId: app.id, grantId: grantId, actor: ctx.actor, reason: form?.reason ?? "", now: context.now())
            let notice: String =
                switch outcome {
                case .revoked: "Revoked grant \(grantId)."
                case .alreadyEnded: "Grant \(grantId) had ended on its own."
                case .notFound: "No grant \(grantId)."
                case .invalid(let problems): "Not revoked: \(problems.joined(separator: "; "))."
                }
            return customerRedirect(app.id, form?.appUserId ?? "", notice, session)
        }
        actions.post("apps/:app/customers/:id/refresh") { request, ctx in
            let session = ctx.session
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try await context.useCases.identity.resolve(appId: app.id, appUserId: try ctx.parameters.decoded("id"))
            guard context.serverAPIClients[app.id] != nil else {
                return customerRedirect(app.id, id, "This app has no App Store Server API key: nothing to refresh from.", session)
            }
            guard
                let result = try await context.useCases.refreshSubscriber(
                    appId: app.id, appUserId: id, actor: ctx.actor, now: context.now())
            else {
                return customerRedirect(app.id, id, "No purchase of this customer is known: nothing to refresh.", session)
            }
            context.logger.notice(
                "console: refresh", metadata: ["account": "\(session.name)", "verification": "\(result.verification.id)"])
            return customerRedirect(app.id, id, "Refresh requested: verification \(result.verification.id).", session)
        }
    }

    /// What a customer's page shows besides their view: promotional access and the refresh, access
    /// granted while Apple could not be asked, Apple's notifications about their purchases (newest
    /// first) and what the server did with each, their verifications (newest first), the events
    /// recorded for them (the first `historyLimit`, in order), their webhook deliveries (per
    /// endpoint, the latest first) and what operators did (the audit log, newest first).
    func customerFacts(appId: String, appUserId: String, view: SubscriberView) async throws -> CustomerPage.Facts {
        let useCases = context.useCases
        return CustomerPage.Facts(
            appId: appId, appUserId: appUserId, view: view,
            grants: try await useCases.promotionalGrants.grants(appId: appId, appUserId: appUserId),
            entitlementIds: try await useCases.catalog.entitlements(appId: appId).map(\.id), serverAPI: context.serverAPIClients[appId] != nil,
            verifications: try await useCases.verifications.list(appId: appId, appUserId: appUserId, limit: Self.historyLimit),
            events: try await useCases.eventFeed.subscriberEvents(appId: appId, appUserId: appUserId, afterSequence: 0, limit: Self.historyLimit),
            audit: try await useCases.promotionalGrants.audit(appId: appId, appUserId: appUserId, limit: Self.historyLimit),
            deliveries: try await useCases.webhookEndpoints.deliveries(appId: appId, appUserId: appUserId, limit: Self.historyLimit),
            provisional: try await useCases.verifications.provisionalAccess(appId: appId, appUserId: appUserId, now: context.now()),
            notifications: try await useCases.purchases.notifications(appId: appId, appUserId: appUserId, limit: Self.historyLimit),
            historyLimit: Self.historyLimit)
    }

    /// Rows of each history table on a customer's page.
    static let historyLimit = 200

    private func customerRedirect(_ app: String, _ user: String, _ notice: String, _ session: ConsoleSession) -> Response {
        redirect("/console/apps/\(ConsoleFormat.pathSegment(app))/customers/\(ConsoleFormat.pathSegment(user))?\(noticeQuery(notice, session))")
    }
}

/// The form granting promotional access from a customer's page.
struct GrantForm: Decodable {
    var entitlementId: String?
    var duration: String?
    var reason: String?
}

/// The form revoking a promotional grant; `appUserId` only says which page to return to.
struct RevokeForm: Decodable {
    var reason: String?
    var appUserId: String?
}
