public import Foundation
public import StorekeeperDomain

/// Events to record in the outbox within a leased transaction. The adapter, for each event
/// whose id is not recorded yet, takes the next sequence number of its app user and the next
/// cursor of its app, reads the subscriber's rows as the transaction left them, and stores the
/// event with `entitlements` built from those rows. An id already recorded is skipped whole
/// (no sequence number is used), so recording the same change again adds nothing.
public struct EventBatch: Sendable {
    public var events: [SubscriberEvent]
    /// The app's catalog when the use case has it already (a grant loads it): the adapter then
    /// does not read it again for `SubscriberRows`.
    public var catalog: [Product]?
    /// The webhook endpoints (of the event's app, as stored) each event is delivered to: the
    /// adapter inserts one delivery and its job per id, in the same transaction.
    public var routes: @Sendable (SubscriberEvent, [WebhookEndpoint]) -> [String] = { event, endpoints in
        endpoints.filter { $0.accepts(event) }.map(\.id)
    }

    /// Each event carries the subscriber's view as ``SubscriberAssembly`` builds it from the rows
    /// stored in the same transaction, at the transaction's `now`.
    public init(events: [SubscriberEvent], catalog: [Product]? = nil) {
        self.events = events
        self.catalog = catalog
    }

    /// Ids of `events` that are not recorded themselves: they only make the adapter assess their
    /// subscriber again at the transaction's `now`, recording the entitlement events that causes.
    public var unrecorded: Set<String> = []

    /// The subscriber's entitlements assessed again at `now` because one was due to lapse: time
    /// passing is the change, so nothing but the entitlement events it causes is recorded. The
    /// ids derive from the subscriber and the instant due, so any number of sweeps record one
    /// `entitlement_expired`; the adapter takes the subscriber's event locks before reading.
    public static func reassessment(_ lapse: DueLapse, now: Date) -> EventBatch {
        let due = StoredTime.ms(lapse.due)
        let trigger = SubscriberEvent(
            id: "evt_lapse_\(SubscriberEvent.fingerprint(lapse.appId, lapse.appUserId))_\(due)", type: .reassessment, appId: lapse.appId,
            environment: nil, appUserId: lapse.appUserId, occurredAt: lapse.due, recordedAt: now)
        var batch = EventBatch(events: [trigger])
        batch.unrecorded = [trigger.id]
        return batch
    }

    /// A test event for one endpoint only.
    public static func test(_ event: SubscriberEvent, endpointId: String) -> EventBatch {
        var batch = EventBatch(events: [event])
        batch.routes = { _, endpoints in endpoints.contains { $0.id == endpointId } ? [endpointId] : [] }
        return batch
    }
}

/// One app user's stored rows: what `SubscriberView` is built from.
public struct SubscriberRows: Sendable {
    public var appUserId: String
    public var transactions: [TransactionRecord]
    public var subscriptions: [SubscriptionFacts]
    /// Provisional grants not yet expired.
    public var provisional: [ProvisionalGrant]
    public var catalog: [Product]
    /// The app's entitlement definitions, as stored in the same transaction.
    public var entitlements: [EntitlementDefinition]
    /// The user's promotional grants not revoked (running, or ended by their own end).
    public var promotional: [PromotionalGrant]
    /// What the app's backend said about the customer; every event's view carries it.
    public var attributes: SubscriberAttributes?
    /// Set while the subscriber's access is withheld.
    public var suspension: AccessSuspension?
    /// Credits the user spent, taken from the view's balance.
    public var creditsSpent: Int
    /// When each entitlement's billing issue and unsubscribe were first seen, as last stored.
    public var entitlementStates: [String: EntitlementState] = [:]
    /// The anonymous ids linked to the user.
    public var aliases: [String] = []
    public var appTransaction: CustomerAppTransaction? = nil

    public init(
        appUserId: String, transactions: [TransactionRecord], subscriptions: [SubscriptionFacts], provisional: [ProvisionalGrant],
        catalog: [Product], entitlements: [EntitlementDefinition], promotional: [PromotionalGrant], attributes: SubscriberAttributes? = nil,
        suspension: AccessSuspension? = nil, creditsSpent: Int = 0
    ) {
        self.creditsSpent = creditsSpent
        self.attributes = attributes
        self.suspension = suspension
        self.promotional = promotional
        self.appUserId = appUserId
        self.transactions = transactions
        self.subscriptions = subscriptions
        self.provisional = provisional
        self.catalog = catalog
        self.entitlements = entitlements
    }
}

/// An event as recorded, with its place in its app's feed.
public struct RecordedEvent: Sendable, Hashable {
    /// Increases with commit order within an app: a reader that passes the last cursor it saw
    /// misses nothing committed after it.
    public var cursor: Int64
    public var event: SubscriberEvent

    public init(cursor: Int64, event: SubscriberEvent) {
        self.cursor = cursor
        self.event = event
    }
}

/// A subscriber with an entitlement due to lapse by `due`.
public struct DueLapse: Sendable, Hashable {
    public var appId: String
    public var appUserId: String
    public var due: Date

    public init(appId: String, appUserId: String, due: Date) {
        self.appId = appId
        self.appUserId = appUserId
        self.due = due
    }
}

extension EventType {
    /// The trigger of a reassessment (``EventBatch/reassessment(_:now:)``); never recorded.
    public static let reassessment = EventType(rawValue: "reassessment")
}

/// The outbox, read: the app's feed and one subscriber's.
public protocol EventStore: Sendable {
    /// Subscribers whose stored entitlement states have one lapsing at or before `now`, the
    /// earliest first (an index on the instant, so the sweep costs what is due).
    func dueLapses(at now: Date, limit: Int) async throws -> [DueLapse]
    /// Events of `appId` after `cursor`, oldest first; only `types` when not empty.
    func events(appId: String, after cursor: Int64, types: [EventType], limit: Int) async throws -> [RecordedEvent]
    /// Events of one app user after sequence number `sequence`, oldest first.
    func subscriberEvents(appId: String, appUserId: String, afterSequence sequence: Int64, limit: Int) async throws -> [RecordedEvent]
    /// Deletes up to `limit` events recorded before `cutoff` whose deliveries have all been
    /// delivered, with those deliveries and their attempts; returns how many events. Counters
    /// are kept, so no cursor or sequence number is ever handed out twice.
    func deleteEvents(recordedBefore cutoff: Date, limit: Int) async throws -> Int
}
