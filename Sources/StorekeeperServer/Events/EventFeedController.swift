import Foundation
import Hummingbird
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// The pull feed of the outbox, for backends that cannot receive webhooks: the app's events in
/// commit order by cursor, and one subscriber's in sequence order. Authenticated by the app's key.
struct EventFeedController {
    let context: ServerContext

    /// Most events one page holds; a reader asks again from `nextCursor`.
    static let maximumLimit = 500
    static let defaultLimit = 100

    func register(on router: RouteTable) {
        let v1 = router.backend("v1")
        v1.get("events") { request, ctx in try await feed(request, ctx.app) }
        v1.get("subscribers/:appUserId/events") { request, ctx in
            try await subscriberFeed(request, ctx.app, appUserId: try ctx.parameters.decoded("appUserId"))
        }
    }

    func feed(_ request: Request, _ app: AppConfiguration) async throws -> Response {
        let query = QueryInput(request)
        let after = Int64(try query.integer("after", in: 0...Int.max) ?? 0)
        let limit = try query.integer("limit", in: 1...Self.maximumLimit) ?? Self.defaultLimit
        // Webhook test events are for the endpoint tested, not the app's feed: only when asked for.
        let asked = try Self.types(query.string("types"))
        let types = asked.isEmpty ? EventType.all.filter { $0 != .test } : asked
        let events = try await context.useCases.eventFeed.events(appId: app.id, after: after, types: types, limit: limit)
        return try StorekeeperJSON.response(
            EventPage(events: events.map { .init(cursor: $0.cursor, event: .init($0.event)) }, nextCursor: events.last?.cursor ?? after))
    }

    func subscriberFeed(_ request: Request, _ app: AppConfiguration, appUserId: String) async throws -> Response {
        let user = try await context.resolve(app, appUserId)
        let query = QueryInput(request)
        let after = Int64(try query.integer("after", in: 0...Int.max) ?? 0)
        let limit = try query.integer("limit", in: 1...Self.maximumLimit) ?? Self.defaultLimit
        let events = try await context.useCases.eventFeed.subscriberEvents(appId: app.id, appUserId: user, afterSequence: after, limit: limit)
        return try StorekeeperJSON.response(
            EventPage(
                events: events.map { .init(cursor: $0.cursor, event: .init($0.event)) }, nextCursor: events.last?.event.sequence ?? after))
    }

    /// `types=refund,renewal`: each must be a type this server emits, so a misspelt filter is an
    /// error rather than a feed that stays empty forever.
    static func types(_ text: String?) throws -> [EventType] {
        guard let text else { return [] }
        var types: [EventType] = []
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            let type = EventType(rawValue: String(name))
            guard EventType.all.contains(type) else {
                throw StorekeeperError(.unknownEventType, "'\(name.prefix(64))' is not an event type")
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }
}
