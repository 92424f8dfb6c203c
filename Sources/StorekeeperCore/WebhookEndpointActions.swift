public import Foundation
import JobQueue
public import Persistence
public import StorekeeperDomain

/// An operator's changes to a webhook endpoint, written once: saves (edits, pause and resume,
/// a rotated secret) through the endpoint lifecycle, deletion (its waiting jobs cancelled),
/// replay of dead deliveries and skipping one. The edge validates the fields; this decides
/// the states.
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

    /// Dead deliveries (one, or all of the endpoint's) go back to the queue. How many did.
    public func replay(endpointId: String, deliveryId: String?, now: Date) async throws -> Int {
        guard let to = DeliveryLifecycle.replayed(from: .dead) else { return 0 }
        return try await store.replayDeliveries(
            endpointId: endpointId, deliveryId: deliveryId, replay: DeliveryReplay(from: .dead, to: to, jobState: JobLifecycle.initial),
            now: now)
    }
}
