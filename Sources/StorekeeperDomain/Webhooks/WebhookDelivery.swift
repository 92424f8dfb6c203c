public import Foundation

/// One event on its way to one endpoint.
public struct WebhookDelivery: Codable, Hashable, Sendable {
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Not delivered yet: waiting for its first attempt, an earlier event of its
        /// subscriber, a retry, or a paused endpoint.
        case pending
        case delivered
        /// Given up after the retry schedule ran out (or the endpoint answered 410): kept, with
        /// every attempt, until an operator replays it.
        case dead
    }

    public var id: String
    public var appId: String
    public var endpointId: String
    public var eventId: String
    public var appUserId: String
    /// The event's sequence number for its subscriber: deliveries to one endpoint go in this order.
    public var sequence: Int64
    public var state: State
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var lastStatus: Int?
    public var lastError: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// When the first attempt of the current run was made (a replay starts a new run): the
    /// retry schedule counts from it.
    public var firstAttemptAt: Date?

    public init(
        id: String, appId: String, endpointId: String, eventId: String, appUserId: String, sequence: Int64, state: State = .pending,
        attempts: Int = 0, nextAttemptAt: Date? = nil, lastStatus: Int? = nil, lastError: String? = nil, createdAt: Date,
        updatedAt: Date, firstAttemptAt: Date? = nil
    ) {
        self.id = id
        self.appId = appId
        self.endpointId = endpointId
        self.eventId = eventId
        self.appUserId = appUserId
        self.sequence = sequence
        self.state = state
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastStatus = lastStatus
        self.lastError = lastError
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.firstAttemptAt = firstAttemptAt
    }
}

/// What one attempt to POST a delivery found, as recorded and shown to an operator.
public struct DeliveryAttempt: Codable, Hashable, Sendable {
    public var deliveryId: String
    public var attempt: Int
    public var at: Date
    /// The HTTP status, when the endpoint answered.
    public var status: Int?
    public var latencyMs: Int
    /// Why it failed without an answer (timeout, connection refused, redirect not followed…).
    public var error: String?
    /// The first bytes of the answer's body, for an operator.
    public var responseExcerpt: String?

    public init(
        deliveryId: String, attempt: Int, at: Date, status: Int?, latencyMs: Int, error: String? = nil, responseExcerpt: String? = nil
    ) {
        self.deliveryId = deliveryId
        self.attempt = attempt
        self.at = at
        self.status = status
        self.latencyMs = latencyMs
        self.error = error
        self.responseExcerpt = responseExcerpt
    }
}
