public import Persistence
public import StorekeeperDomain

/// The event feed a backend pages through: the app's events after a cursor, or one subscriber's
/// after a sequence number, as they were recorded in the outbox.
public struct ReadEventFeed: Sendable {
    let store: any EventStore

    public init(store: any EventStore) {
        self.store = store
    }

    public func events(appId: String, after cursor: Int64, types: [EventType], limit: Int) async throws -> [RecordedEvent] {
        try await store.events(appId: appId, after: cursor, types: types, limit: limit)
    }

    public func subscriberEvents(
        appId: String, appUserId: String, afterSequence sequence: Int64, limit: Int
    ) async throws
        -> [RecordedEvent]
    {
        try await store.subscriberEvents(appId: appId, appUserId: appUserId, afterSequence: sequence, limit: limit)
    }
}
