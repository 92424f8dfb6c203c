public import Foundation
import JobQueue
public import Persistence
public import StorekeeperDomain

/// An operator's webhook endpoints, written once: creation, saves (edits, pause and resume, a
/// rotated secret) through the endpoint lifecycle, deletion (its waiting jobs cancelled),
/// replay of dead deliveries and skipping one, a test event, and what the operator reads of
/// them. The edge validates the fields; this decides the states.
public struct WebhookEndpointActions: Sendable {
    let store: any WebhookStore

    public init(store: any WebhookStore) {
        self.store = store
    }

    public enum Saved: Sendable, Hashable {
        case saved(WebhookEndpoint)
        case notFound
        /// Its state changed meanwhile (a delivery died and paused it): read it again.
        case conflict
    }

    /// Saves `edited` (read as `stored`), paused or resumed when `requested` says so.
    public func save(
        _ edited: WebhookEndpoint, over stored: WebhookEndpoint, requested: WebhookEndpoint.State?, now: Date
    ) async throws
        -> Saved
    {
        var endpoint = edited
        if let requested {
            let event: EndpointLifecycle.Event = requested == .paused ? .paused : .resumed
            if let transition = EndpointLifecycle.next(from: stored.state, on: event) {
                endpoint.state = transition.to
                endpoint.pausedReason = transition.pausedReason
            }
        } else {
            endpoint.state = stored.state
            endpoint.pausedReason = stored.pausedReason
        }
        endpoint.updatedAt = now
        if try await store.updateEndpoint(endpoint, from: stored.state, now: now) { return .saved(endpoint) }
        return try await store.endpoint(appId: stored.appId, id: stored.id) == nil ? .notFound : .conflict
    }

    /// False when there is no such endpoint.
    public func delete(appId: String, id: String, now: Date) async throws -> Bool {
        try await store.deleteEndpoint(appId: appId, id: id, cancel: JobLifecycle.cancel(reason: JobReason.endpointDeleted), now: now)
    }

    /// Dead deliveries (one, or all of the endpoint's) go back to the queue, audited in the same
    /// transaction in `actor`'s name (`webhook_replayed`; the delivery, or the endpoint, as
    /// subject) when any did. How many did.
    public func replay(endpoint: WebhookEndpoint, deliveryId: String?, actor: AuditActor, now: Date) async throws -> Int {
        guard let to = DeliveryLifecycle.replayed(from: .dead) else { return 0 }
        return try await store.replayDeliveries(
            endpointId: endpoint.id, deliveryId: deliveryId, replay: DeliveryReplay(from: .dead, to: to, jobState: JobLifecycle.initial),
            audit: Self.audit(endpoint, action: "webhook_replayed", subject: deliveryId ?? endpoint.id, actor: actor, now: now), now: now)
    }

    public func endpoints(appId: String) async throws -> [WebhookEndpoint] {
        try await store.endpoints(appId: appId)
    }

    public func endpoint(appId: String, id: String) async throws -> WebhookEndpoint? {
        try await store.endpoint(appId: appId, id: id)
    }

    /// Stores a new endpoint; one created paused says so in its reason, like an operator's pause.
    public func create(_ endpoint: WebhookEndpoint) async throws -> WebhookEndpoint {
        var created = endpoint
        if created.state == .paused, created.pausedReason == nil {
            created.pausedReason = EndpointLifecycle.next(from: .active, on: .paused)?.pausedReason
        }
        try await store.createEndpoint(created)
        return created
    }

    /// Audited in `actor`'s name (`webhook_skipped`). False when the endpoint has no such dead
    /// delivery.
    public func skip(endpoint: WebhookEndpoint, deliveryId: String, actor: AuditActor, now: Date) async throws -> Bool {
        try await store.skipDeadDelivery(
            endpointId: endpoint.id, deliveryId: deliveryId,
            audit: Self.audit(endpoint, action: "webhook_skipped", subject: deliveryId, actor: actor, now: now), now: now)
    }

    static func audit(_ endpoint: WebhookEndpoint, action: String, subject: String, actor: AuditActor, now: Date) -> AuditEntry {
        AuditEntry(
            id: AuditEntry.freshId(), appId: endpoint.appId, at: now, actor: actor.name, action: action, appUserId: nil,
            reason: actor.reason, subject: subject
        ).attributed(to: actor)
    }

    /// A `test` event for this endpoint alone (not in the feed of any user), delivered like any
    /// other so the operator sees the signature, the retries and the dead letter work. Its id.
    public func sendTest(to endpoint: WebhookEndpoint, now: Date) async throws -> String {
        let event = SubscriberEvent(
            id: SubscriberEvent.id(type: .test, subject: endpoint.id, cause: UUID().uuidString.lowercased()), type: .test,
            appId: endpoint.appId, environment: nil, appUserId: "storekeeper_test", occurredAt: now, recordedAt: now)
        try await store.recordEvents(.test(event, endpointId: endpoint.id), now: now)
        return event.id
    }

    /// A delivery and every attempt at it, oldest attempt first.
    public struct DeliveryHistory: Sendable {
        public var delivery: WebhookDelivery
        public var attempts: [DeliveryAttempt]
    }

    /// Of an endpoint's latest `limit` deliveries, how many ended (delivered or dead) and how
    /// many of those were delivered: its success rate as an operator reads it.
    public func outcomes(endpointId: String, limit: Int) async throws -> (delivered: Int, ended: Int) {
        let recent = try await store.deliveries(endpointId: endpointId, state: nil, before: nil, limit: limit)
        return (recent.count { $0.state == .delivered }, recent.count { $0.state != .pending })
    }

    /// One customer's deliveries to each of the app's endpoints, the latest events first, at most
    /// `limit` per endpoint (a customer's page).
    public func deliveries(appId: String, appUserId: String, limit: Int) async throws -> [WebhookDelivery] {
        var found: [WebhookDelivery] = []
        for endpoint in try await store.endpoints(appId: appId) {
            found += try await store.deliveries(endpointId: endpoint.id, appUserId: appUserId, limit: limit)
        }
        return found
    }

    /// Newest first, from after `before` when given; only `state` when given.
    public func deliveries(
        endpointId: String, state: WebhookDelivery.State?, before: DeliveryPosition? = nil, limit: Int
    ) async throws -> [DeliveryHistory] {
        var histories: [DeliveryHistory] = []
        for delivery in try await store.deliveries(endpointId: endpointId, state: state, before: before, limit: limit) {
            histories.append(DeliveryHistory(delivery: delivery, attempts: try await store.attempts(deliveryId: delivery.id)))
        }
        return histories
    }
}
