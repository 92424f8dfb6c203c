public import Foundation
public import Persistence
public import StorekeeperDomain

/// What one app user owns now, as `GET /v1/subscribers/{id}` answers it: one read of their
/// stored rows, assembled by ``SubscriberAssembly`` exactly as each of their events carries it,
/// so the API, the events and whatever later reads a customer (the console) agree.
public struct ReadSubscriber: Sendable {
    let store: any LedgerStore

    public init(store: any LedgerStore) {
        self.store = store
    }

    public func callAsFunction(appId: String, appUserId: String, now: Date) async throws -> SubscriberView {
        SubscriberAssembly(try await store.subscriberRows(appId: appId, appUserId: appUserId, now: now), now: now).view
    }
}
