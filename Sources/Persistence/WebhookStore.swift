public import Foundation
public import JobQueue
public import StorekeeperDomain

/// The kind of the job that makes one attempt of one webhook delivery (its payload is the delivery id).
public let deliverWebhookJobKind = "deliver_webhook"

/// A delivery's `eventId` when it forwards an App Store Server Notification instead of an
/// event: this prefix, then the notification's UUID.
public let forwardedNotificationPrefix = "notification:"

/// What a delivery carries.
public enum DeliveryPayload: Sendable {
    /// An event: `body` is its wire form, as stored (`StoredEventBody`).
    case event(id: String, body: String)
    /// An App Store Server Notification, forwarded: `body` is what Apple POSTed (a V2
    /// `{"signedPayload": …}` or a V1 body, byte for byte as stored).
    case notification(uuid: String, body: String)

    /// The `webhook-id` of the delivery: the event's id, or the notification's UUID.
    public var id: String {
        switch self {
        case .event(let id, _): id
        case .notification(let uuid, _): uuid
        }
    }
}

/// What a delivery job needs, read in one go.
public struct DeliveryWork: Sendable {
    public var delivery: WebhookDelivery
    public var payload: DeliveryPayload
    /// Nil when the endpoint was deleted since.
    public var endpoint: WebhookEndpoint?
    /// When an earlier event of the same subscriber to the same endpoint, still pending, is due:
    /// this one waits until then (order per subscriber). Nil when there is none.
    public var earlierDueAt: Date?
    /// An earlier event of the same subscriber to the same endpoint is dead and neither replayed
    /// nor skipped: this one waits for the operator (order holds through dead letters).
    public var earlierDead: Bool

    public init(delivery: WebhookDelivery, payload: DeliveryPayload, endpoint: WebhookEndpoint?, earlierDueAt: Date?, earlierDead: Bool = false) {
        self.delivery = delivery
        self.payload = payload
        self.endpoint = endpoint
        self.earlierDueAt = earlierDueAt
        self.earlierDead = earlierDead
    }

    /// `last_error` of a dead delivery an operator skipped: it stays dead (never delivered, still
    /// replayable) and no longer holds its subscriber's later events back.
    public static let skippedMarker = "skipped_by_operator"

    /// The body a forwarded notification is POSTed with: Apple's V2 body is
    /// `{"signedPayload":"<JWS>"}` (stored as the JWS alone); a V1 body is stored whole.
    public static func notificationBody(storedPayload: String) -> String {
        storedPayload.hasPrefix("{") ? storedPayload : #"{"signedPayload":"\#(storedPayload)"}"#
    }
}

/// How an attempt ends, applied in the delivery job's transaction: the attempt recorded, the
/// delivery moved on (guarded: it must still be pending), the job ended under its lease, and
/// the endpoint paused when the delivery died (through its lifecycle: only from the state the
/// transition names, so an endpoint an operator paused meanwhile keeps the operator's pause).
public struct DeliveryChange: Sendable {
    public var deliveryId: String
    public var attempt: DeliveryAttempt
    /// The state the attempt found the delivery in (the guard of its write).
    public var from: WebhookDelivery.State
    public var to: WebhookDelivery.State
    public var nextAttemptAt: Date?
    public var firstAttemptAt: Date
    public var job: JobLifecycle.Transition
    public var pause: (endpointId: String, transition: EndpointLifecycle.Transition)?

    public init(
        deliveryId: String, attempt: DeliveryAttempt, from: WebhookDelivery.State = .pending, to: WebhookDelivery.State,
        nextAttemptAt: Date?, firstAttemptAt: Date, job: JobLifecycle.Transition,
        pause: (endpointId: String, transition: EndpointLifecycle.Transition)? = nil
    ) {
        self.deliveryId = deliveryId
        self.attempt = attempt
        self.from = from
        self.to = to
        self.nextAttemptAt = nextAttemptAt
        self.firstAttemptAt = firstAttemptAt
        self.job = job
        self.pause = pause
    }
}

/// An operator's replay of deliveries as the lifecycles decide it.
public struct DeliveryReplay: Sendable, Hashable {
    public var from: WebhookDelivery.State
    public var to: WebhookDelivery.State
    public var jobState: JobState

    public init(from: WebhookDelivery.State, to: WebhookDelivery.State, jobState: JobState) {
        self.from = from
        self.to = to
        self.jobState = jobState
    }
}

/// Webhook endpoints and their deliveries.
public protocol WebhookStore: Sendable {
    func createEndpoint(_ endpoint: WebhookEndpoint) async throws
    func endpoints(appId: String) async throws -> [WebhookEndpoint]
    func endpoint(appId: String, id: String) async throws -> WebhookEndpoint?
    /// Stores the endpoint as given if its stored state is still `from` (the lifecycle's guard).
    /// When it is active, its pending deliveries are due at `now`. False when there is no such
    /// endpoint in that state.
    func updateEndpoint(_ endpoint: WebhookEndpoint, from: WebhookEndpoint.State, now: Date) async throws -> Bool
    /// Deletes the endpoint with its deliveries and their attempts; their jobs not running take
    /// `cancel` (a running one finds its delivery gone and completes by itself).
    func deleteEndpoint(appId: String, id: String, cancel: JobLifecycle.Transition, now: Date) async throws -> Bool
    /// Newest first, from after `before` when given; only `state` when given.
    func deliveries(endpointId: String, state: WebhookDelivery.State?, before: DeliveryPosition?, limit: Int) async throws -> [WebhookDelivery]
    func attempts(deliveryId: String) async throws -> [DeliveryAttempt]
    /// One subscriber's deliveries to the endpoint, the latest event first (`webhook_deliveries_order`).
    func deliveries(endpointId: String, appUserId: String, limit: Int) async throws -> [WebhookDelivery]
    /// Deliveries of the endpoint in `replay.from` (only `deliveryId` when given) move to
    /// `replay.to`, due at `now`, each with a new job in `replay.jobState`, and `audit` is recorded
    /// when any did, in one transaction. Returns how many.
    func replayDeliveries(endpointId: String, deliveryId: String?, replay: DeliveryReplay, audit: AuditEntry?, now: Date) async throws -> Int
    /// Marks one dead delivery skipped (`DeliveryWork.skippedMarker`) so its subscriber's later
    /// events go on without it, with `audit`, in one transaction. False when the endpoint has no
    /// such dead delivery (nothing written).
    func skipDeadDelivery(endpointId: String, deliveryId: String, audit: AuditEntry?, now: Date) async throws -> Bool
    /// What each of these delivery jobs has to send, read together (one read for a batch of
    /// leases); a job whose delivery, event or notification is gone is absent.
    func deliveriesForJobs(jobIds: [String]) async throws -> [String: DeliveryWork]
    /// Applies `change` in one transaction; false (nothing written) when the lease was lost.
    func finishDeliveryAttempt(_ lease: JobLease, _ change: DeliveryChange, now: Date) async throws -> Bool
    func deliveryCounts() async throws -> [WebhookDelivery.State: Int]
    /// Events recorded outside any job (a test event): the same outbox write, in a transaction of its own.
    func recordEvents(_ batch: EventBatch, now: Date) async throws
}

extension WebhookStore {
    /// What one delivery job has to send.
    public func deliveryForJob(jobId: String) async throws -> DeliveryWork? {
        try await deliveriesForJobs(jobIds: [jobId])[jobId]
    }
}
