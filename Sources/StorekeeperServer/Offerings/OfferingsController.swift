import AppStoreModels
import Foundation
import Hummingbird
import NIOCore
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Offerings: what an app is shown (`GET /v1/offerings`) and the operator routes that edit
/// them, their targeting and users' overrides. Only translation: `ManageOfferings` decides.
struct OfferingsController {
    let context: ServerContext

    func register(on router: RouteTable) {
        router.callers("v1").get("offerings") { request, ctx in try await offerings(request, ctx.caller) }
        let admin = router.admin("v1/admin/apps/:app")
        admin.get("offerings") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let (offerings, targeting) = try await context.useCases.offerings.offerings(appId: app.id)
            struct Listing: Encodable {
                var offerings: [Offering]
                var targeting: OfferingTargeting
            }
            return try StorekeeperJSON.response(Listing(offerings: offerings, targeting: targeting))
        }
        admin.put("offerings/:offeringId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let actor = try AdminInput.actor(request, ctx)
            struct Body: Decodable {
                var description: String?
                var packages: [OfferingPackage]
                var metadata: JSONValue?
            }
            let data = try await context.body(request)
            // The path names the offering: an `id` in the body would look applied and is not.
            try AdminInput.refuseFields(
                data, except: ["description", "packages", "metadata"], nested: ["packages": ["id", "productId"]], note: "the path names the offering")
            let body = try StorekeeperJSON.decode(Body.self, from: data)
            let offering = Offering(
                id: try ctx.parameters.decoded("offeringId"), description: body.description, packages: body.packages, metadata: body.metadata)
            let problems = try await context.useCases.offerings.save(appId: app.id, offering: offering, actor: actor, now: context.now())
            guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
            return try StorekeeperJSON.response(offering)
        }
        admin.delete("offerings/:offeringId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("offeringId")
            switch try await context.useCases.offerings.delete(
                appId: app.id, offeringId: id, actor: try AdminInput.actor(request, ctx), now: context.now())
            {
            case .deleted: return Response(status: .noContent)
            case .notFound: throw StorekeeperError(.notFound, "no offering '\(id)'")
            case .referenced(let current, let rules):
                let places = (current ? ["current"] : []) + rules.map { "rule '\($0)'" }
                throw StorekeeperError(.conflict, "offering '\(id)' is named by the targeting (\(places.joined(separator: ", "))); change that first")
            }
        }
        admin.put("offering-targeting") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let actor = try AdminInput.actor(request, ctx)
            let data = try await context.body(request)
            try AdminInput.refuseFields(
                data, except: ["current", "rules"], nested: ["rules": ["id", "offering", "storefronts", "minAppVersion", "maxAppVersion"]], note: nil)
            let targeting = try StorekeeperJSON.decode(OfferingTargeting.Body.self, from: data).targeting
            switch try await context.useCases.offerings.save(appId: app.id, targeting: targeting, actor: actor, now: context.now()) {
            case .saved: return try StorekeeperJSON.response(targeting)
            case .invalid(let problems): throw StorekeeperError(.invalidRequest, problems.joined(separator: "; "))
            case .unknownOfferings(let ids):
                throw StorekeeperError(.notFound, "no offering " + ids.map { "'\($0)'" }.joined(separator: ", ") + " in app '\(app.id)'")
            }
        }
        registerOverrides(on: admin)
        registerExperiments(on: admin)
    }

    /// One user's override: read, set, cleared.
    private func registerOverrides(on admin: RouterGroup<AdminRequestContext>) {
        struct Override: Codable { var offeringId: String? }
        admin.get("subscribers/:appUserId/offering-override") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            return try StorekeeperJSON.response(
                Override(offeringId: try await context.useCases.offerings.override(appId: app.id, appUserId: appUserId)))
        }
        admin.put("subscribers/:appUserId/offering-override") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            let actor = try AdminInput.actor(request, ctx)
            let data = try await context.body(request)
            try AdminInput.refuseFields(data, except: ["offeringId"], note: nil)
            guard let offeringId = try StorekeeperJSON.decode(Override.self, from: data).offeringId else {
                throw StorekeeperError(.invalidRequest, "offeringId: required (DELETE clears an override)")
            }
            switch try await context.useCases.offerings.setOverride(
                appId: app.id, appUserId: appUserId, offeringId: offeringId, actor: actor, now: context.now())
            {
            case .unknownOffering: throw StorekeeperError(.notFound, "no offering '\(offeringId)'")
            default: return try StorekeeperJSON.response(Override(offeringId: offeringId))
            }
        }
        admin.delete("subscribers/:appUserId/offering-override") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let appUserId = try await context.resolve(app, try ctx.parameters.decoded("appUserId"))
            switch try await context.useCases.offerings.setOverride(
                appId: app.id, appUserId: appUserId, offeringId: nil, actor: try AdminInput.actor(request, ctx), now: context.now())
            {
            case .noOverride: throw StorekeeperError(.notFound, "'\(appUserId)' has no offering override")
            default: return Response(status: .noContent)
            }
        }
    }

    /// What the app is shown now. The user is the one the caller proved: a client's user token,
    /// or `appUserId` from the app's backend; an anonymous client gets no user's override.
    /// `storefront` and `appVersion` only choose what to show, so the caller's word is enough.
    func offerings(_ request: Request, _ caller: Caller) async throws -> Response {
        let query = QueryInput(request)
        var named: String?
        if let asked = query.string("appUserId") { named = try await context.identify(caller, asked) }
        let user: String? =
            switch caller {
            case .backend: named
            case .client(_, let tokenUser?): try await context.identify(caller, tokenUser)
            case .client(_, nil): nil
            }
        var audience = OfferingAudience()
        if let text = query.string("storefront") {
            guard let storefront = Storefront(text) else {
                throw StorekeeperError(.invalidRequest, "storefront: three letters (ISO 3166-1 alpha-3, as Apple's storefront)")
            }
            audience.storefront = storefront
        }
        if let text = query.string("appVersion") {
            guard let version = AppVersion(text) else {
                throw StorekeeperError(.invalidRequest, "appVersion: 1-4 dot-separated numbers of at most 9 digits (2.10.1)")
            }
            audience.appVersion = version
        }
        let selection = try await context.useCases.offerings.forApp(appId: caller.app.id, appUserId: user, audience: audience, now: context.now())
        return try StorekeeperJSON.response(OfferingsAnswer(selection))
    }
}

extension OfferingTargeting {
    /// The targeting as a body sends it: `rules` may be left out.
    struct Body: Decodable {
        var current: String?
        var rules: [OfferingRule]?

        var targeting: OfferingTargeting { OfferingTargeting(current: current, rules: rules ?? []) }
    }
}
