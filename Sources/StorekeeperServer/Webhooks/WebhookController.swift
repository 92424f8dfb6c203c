import Foundation
import Hummingbird
import JobQueue
import NIOCore
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Operator routes for an app's webhook endpoints and their deliveries (admin key). A secret is
/// shown once, when it is made (create, rotate); nothing else ever returns it.
struct WebhookController {
    let context: ServerContext

    /// The URLs accepted, exactly as docs/openapi.yaml states them: nothing a URL parser could
    /// read two ways (credentials, escapes, a query) goes to a receiver with a signed event.
    nonisolated(unsafe) static let urlShape =
        /https?:\/\/([A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.?|\[[0-9A-Fa-f:.]+\])(:([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(\/[A-Za-z0-9._~-]*)*/

    /// Every stored endpoint's id, of every app: what `/metrics` may still name.
    static func liveEndpointIds(_ context: ServerContext) async throws -> Set<String> {
        var ids: Set<String> = []
        for app in context.apps { ids.formUnion(try await context.useCases.webhookEndpoints.endpoints(appId: app.id).map(\.id)) }
        return ids
    }

    /// How long the previous secret stays valid after a rotation: receivers have a day to switch.
    static let rotationOverlapSeconds: Double = 86_400

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin/apps/:app/webhooks")
        admin.post("") { request, ctx in try await create(request, appId: try ctx.parameters.decoded("app")) }
        admin.get("") { request, ctx in
            let app = try pathApp(ctx)
            return try StorekeeperJSON.response([
                "endpoints": try await context.useCases.webhookEndpoints.endpoints(appId: app.id).map(EndpointView.init)
            ])
        }
        admin.get(":id") { request, ctx in
            try StorekeeperJSON.response(EndpointView(try await endpoint(request, ctx)))
        }
        admin.patch(":id") { request, ctx in try await update(request, ctx) }
        admin.delete(":id") { request, ctx in
            let app = try pathApp(ctx)
            let id = try ctx.parameters.decoded("id")
            guard try await actions.delete(appId: app.id, id: id, now: context.now()) else {
                throw StorekeeperError(.notFound, "no webhook endpoint '\(id)'")
            }
            // Its series leave this process's `/metrics` now; other processes drop them at their next scrape.
            context.metrics.forgetWebhookEndpoints(keeping: try await Self.liveEndpointIds(context))
            return Response(status: .noContent)
        }
        admin.post(":id/rotate-secret") { request, ctx in try await rotate(request, ctx) }
        admin.post(":id/test") { request, ctx in try await sendTest(request, ctx) }
        admin.get(":id/deliveries") { request, ctx in try await deliveries(request, ctx) }
        admin.post(":id/deliveries/:delivery/replay") { request, ctx in
            let endpoint = try await endpoint(request, ctx)
            let delivery = try ctx.parameters.decoded("delivery")
            let replayed = try await actions.replay(
                endpoint: endpoint, deliveryId: delivery, actor: try AdminInput.actor(request, ctx), now: context.now())
            guard replayed == 1 else { throw StorekeeperError(.notFound, "no dead delivery '\(delivery)' for this endpoint") }
            return try StorekeeperJSON.response(["replayed": replayed], status: .accepted)
        }
        admin.post(":id/deliveries/:delivery/skip") { request, ctx in
            let endpoint = try await endpoint(request, ctx)
            let delivery = try ctx.parameters.decoded("delivery")
            guard try await actions.skip(endpoint: endpoint, deliveryId: delivery, actor: try AdminInput.actor(request, ctx), now: context.now())
            else {
                throw StorekeeperError(.notFound, "no dead delivery '\(delivery)' for this endpoint")
            }
            return try StorekeeperJSON.response(["skipped": delivery])
        }
        admin.post(":id/replay") { request, ctx in
            let endpoint = try await endpoint(request, ctx)
            let replayed = try await actions.replay(
                endpoint: endpoint, deliveryId: nil, actor: try AdminInput.actor(request, ctx), now: context.now())
            return try StorekeeperJSON.response(["replayed": replayed], status: .accepted)
        }
    }

    /// `POST …/webhooks` and `PATCH …/webhooks/{id}` bodies; absent fields keep their value on PATCH.
    struct EndpointBody: Decodable {
        static let keys: Set<String> = ["url", "description", "environments", "eventTypes", "state", "appStoreNotifications"]

        var url: String?
        var description: String?
        var environments: [String]?
        var eventTypes: [String]?
        var state: WebhookEndpoint.State?
        /// Forward App Store Server Notifications as received, instead of events.
        var appStoreNotifications: Bool?
    }

    /// An endpoint as shown: everything but its secrets.
    struct EndpointView: Encodable {
        var id: String
        var appId: String
        var url: String
        var description: String?
        var environments: [String]
        var eventTypes: [EventType]
        var appStoreNotifications: Bool
        var state: WebhookEndpoint.State
        var pausedReason: String?
        var createdAt: Date
        var updatedAt: Date
        /// While a rotation's previous secret is still accepted.
        var previousSecretExpiresAt: Date?

        init(_ endpoint: WebhookEndpoint) {
            id = endpoint.id
            appId = endpoint.appId
            url = endpoint.url
            description = endpoint.description
            environments = endpoint.environments
            eventTypes = endpoint.eventTypes
            appStoreNotifications = endpoint.forwardsNotifications
            state = endpoint.state
            pausedReason = endpoint.pausedReason
            createdAt = endpoint.createdAt
            updatedAt = endpoint.updatedAt
            previousSecretExpiresAt = endpoint.secrets.compactMap(\.expiresAt).max()
        }
    }

    struct CreatedView: Encodable {
        var endpoint: EndpointView
        /// Shown once: store it where the receiver verifies signatures.
        var secret: String
    }

    /// The app in the route's path.
    private func pathApp(_ ctx: AdminRequestContext) throws -> AppConfiguration {
        try context.app(id: try ctx.parameters.decoded("app"))
    }

    private func endpoint(_ request: Request, _ ctx: AdminRequestContext) async throws -> WebhookEndpoint {
        let app = try pathApp(ctx)
        let id = try ctx.parameters.decoded("id")
        guard let endpoint = try await context.useCases.webhookEndpoints.endpoint(appId: app.id, id: id) else {
            throw StorekeeperError(.notFound, "no webhook endpoint '\(id)'")
        }
        return endpoint
    }

    private func create(_ request: Request, appId: String) async throws -> Response {
        let app = try context.app(id: appId)
        let body = try Self.endpointBody(try await context.body(request))
        guard let url = body.url else { throw StorekeeperError(.invalidWebhook, "url is required") }
        let now = context.now()
        let secret = WebhookSignature.newSecret()
        var endpoint = WebhookEndpoint(
            id: "whep_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""), appId: app.id, url: url,
            secrets: [.init(value: secret, createdAt: now)], state: body.state ?? .active, createdAt: now, updatedAt: now)
        try Self.apply(body, to: &endpoint, destinations: context.configuration.webhooks.destinationPolicy)
        let created = try await actions.create(endpoint)
        return try StorekeeperJSON.response(CreatedView(endpoint: EndpointView(created), secret: secret), status: .created)
    }

    /// The use cases behind the operator's routes.
    private var actions: WebhookEndpointActions { context.useCases.webhookEndpoints }

    private func update(_ request: Request, _ ctx: AdminRequestContext) async throws -> Response {
        let stored = try await endpoint(request, ctx)
        var edited = stored
        let body = try Self.endpointBody(try await context.body(request))
        try Self.apply(body, to: &edited, destinations: context.configuration.webhooks.destinationPolicy)
        let endpoint = try await saved(edited, over: stored, requested: body.state)
        return try StorekeeperJSON.response(EndpointView(endpoint))
    }

    /// Maps the save's outcome to the answer.
    private func saved(
        _ edited: WebhookEndpoint, over stored: WebhookEndpoint, requested: WebhookEndpoint.State?
    ) async throws
        -> WebhookEndpoint
    {
        switch try await actions.save(edited, over: stored, requested: requested, now: context.now()) {
        case .saved(let endpoint): return endpoint
        case .notFound: throw StorekeeperError(.notFound, "no webhook endpoint '\(stored.id)'")
        case .conflict: throw StorekeeperError(.conflict, "webhook endpoint '\(stored.id)' changed meanwhile: read it and try again")
        }
    }

    private func rotate(_ request: Request, _ ctx: AdminRequestContext) async throws -> Response {
        let stored = try await endpoint(request, ctx)
        var edited = stored
        let now = context.now()
        let secret = WebhookSignature.newSecret()
        // The current secret stays valid through the overlap; older ones end now.
        edited.secrets =
            stored.secrets.filter { $0.expiresAt == nil }.map {
                WebhookEndpoint.Secret(value: $0.value, createdAt: $0.createdAt, expiresAt: now.addingTimeInterval(Self.rotationOverlapSeconds))
            } + [.init(value: secret, createdAt: now)]
        let endpoint = try await saved(edited, over: stored, requested: nil)
        return try StorekeeperJSON.response(CreatedView(endpoint: EndpointView(endpoint), secret: secret))
    }

    private func sendTest(_ request: Request, _ ctx: AdminRequestContext) async throws -> Response {
        let endpoint = try await endpoint(request, ctx)
        let eventId = try await actions.sendTest(to: endpoint, now: context.now())
        return try StorekeeperJSON.response(["eventId": eventId], status: .accepted)
    }

    private func deliveries(_ request: Request, _ ctx: AdminRequestContext) async throws -> Response {
        let endpoint = try await endpoint(request, ctx)
        let query = QueryInput(request)
        let state = try query.oneOf("state", WebhookDelivery.State.allCases.map(\.rawValue)).flatMap(WebhookDelivery.State.init(rawValue:))
        let limit = try query.integer("limit", in: 1...500) ?? 100
        var before: DeliveryPosition?
        if let token = query.string("before") {
            guard let position = DeliveryPosition(token: token) else {
                throw StorekeeperError(.invalidRequest, "before: a nextCursor this server gave")
            }
            before = position
        }
        struct DeliveryView: Encodable {
            var delivery: WebhookDelivery
            var attempts: [DeliveryAttempt]
        }
        struct Page: Encodable {
            var deliveries: [DeliveryView]
            /// Pass as `before` for the next (older) page; absent when this one is not full.
            var nextCursor: String?
        }
        let histories = try await actions.deliveries(endpointId: endpoint.id, state: state, before: before, limit: limit)
        let last = histories.count == limit ? histories.last.map { DeliveryPosition(createdAt: $0.delivery.createdAt, id: $0.delivery.id) } : nil
        return try StorekeeperJSON.response(
            Page(deliveries: histories.map { DeliveryView(delivery: $0.delivery, attempts: $0.attempts) }, nextCursor: last?.token))
    }

    /// The body, refusing keys it does not have: a misspelled filter (`eventType` for
    /// `eventTypes`) would otherwise leave the endpoint receiving everything.
    static func endpointBody(_ buffer: ByteBuffer) throws -> EndpointBody {
        let body = try StorekeeperJSON.decode(EndpointBody.self, from: buffer)
        let object = try? JSONSerialization.jsonObject(with: Data(buffer.readableBytesView)) as? [String: Any]
        if let unknown = object?.keys.sorted().first(where: { !EndpointBody.keys.contains($0) }) {
            throw StorekeeperError(
                .invalidWebhook, "unknown field '\(unknown.prefix(64))'; the fields are \(EndpointBody.keys.sorted().joined(separator: ", "))")
        }
        return body
    }

    /// Checks and applies a body's fields: an http(s) URL with a host outside the private
    /// network (`destinations`), known environments and event types, a short description.
    static func apply(_ body: EndpointBody, to endpoint: inout WebhookEndpoint, destinations: WebhookDestinationPolicy) throws {
        if let url = body.url {
            guard url.utf8.count <= 2_048, url.wholeMatch(of: Self.urlShape) != nil, let host = WebhookDestinationPolicy.host(of: url) else {
                throw StorekeeperError(
                    .invalidWebhook,
                    "url must be http(s)://host[:port][/path] (letters, digits, '-', '.', '_', '~' in the path; no credentials, query or fragment), at most 2048 bytes"
                )
            }
            if let refusal = destinations.refusal(host: host) {
                throw StorekeeperError(
                    .webhookDestinationRefused,
                    "\(refusal): webhooks go to receivers on the internet (set webhooks.allowPrivateDestinations or webhooks.allowedDestinationNetworks for your own network)"
                )
            }
            endpoint.url = url
        }
        if let description = body.description {
            guard description.unicodeScalars.count <= 256 else { throw StorekeeperError(.invalidWebhook, "description: at most 256 characters") }
            endpoint.description = description.isEmpty ? nil : description
        }
        if let environments = body.environments {
            guard environments.allSatisfy({ ["production", "sandbox"].contains($0) }) else {
                throw StorekeeperError(.invalidWebhook, "environments: each must be 'production' or 'sandbox'")
            }
            endpoint.environments = Array(Set(environments)).sorted()
        }
        if let forwards = body.appStoreNotifications { endpoint.appStoreNotifications = forwards }
        if let names = body.eventTypes {
            var types: [EventType] = []
            for name in names {
                let type = EventType(rawValue: name)
                guard EventType.all.contains(type), type != .test else {
                    throw StorekeeperError(.unknownEventType, "eventTypes: '\(name.prefix(64))' is not an event type")
                }
                if !types.contains(type) { types.append(type) }
            }
            endpoint.eventTypes = types
        }
    }
}
