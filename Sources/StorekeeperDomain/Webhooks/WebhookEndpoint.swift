public import Foundation

/// A URL of the app's backend that receives the app's events, signed (Standard Webhooks).
public struct WebhookEndpoint: Codable, Hashable, Sendable {
    public enum State: String, Codable, Sendable {
        case active
        /// Nothing is sent until an operator resumes it; deliveries wait, none is dropped.
        case paused
    }

    /// A signing secret (`whsec_` + base64 of the key). During a rotation the previous one stays
    /// valid until `expiresAt`, and each delivery is signed with both.
    public struct Secret: Codable, Hashable, Sendable {
        public var value: String
        public var createdAt: Date
        public var expiresAt: Date?

        public init(value: String, createdAt: Date, expiresAt: Date? = nil) {
            self.value = value
            self.createdAt = createdAt
            self.expiresAt = expiresAt
        }
    }

    public var id: String
    public var appId: String
    public var url: String
    public var description: String?
    /// Only events of these environments (`production`, `sandbox`); empty: every environment.
    /// Events with no environment (a verification found invalid, the outage policy) always pass.
    public var environments: [String]
    /// Only these types; empty: every type.
    public var eventTypes: [EventType]
    /// The endpoint receives App Store Server Notifications as Apple sent them (forwarded once
    /// verified and stored) instead of events. Absent in rows written before it existed.
    public var appStoreNotifications: Bool?
    public var secrets: [Secret]
    public var state: State
    /// Why it was paused: by an operator, or by the server after deliveries failed for days.
    public var pausedReason: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String, appId: String, url: String, description: String? = nil, environments: [String] = [], eventTypes: [EventType] = [],
        secrets: [Secret], state: State = .active, pausedReason: String? = nil, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.appId = appId
        self.url = url
        self.description = description
        self.environments = environments
        self.eventTypes = eventTypes
        self.secrets = secrets
        self.state = state
        self.pausedReason = pausedReason
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Whether `event` goes to this endpoint. A `test` event goes only where it was asked for,
    /// so it is never routed by filters.
    public func accepts(_ event: SubscriberEvent) -> Bool {
        guard event.appId == appId, event.type != .test, !forwardsNotifications else { return false }
        if !eventTypes.isEmpty, !eventTypes.contains(event.type) { return false }
        if !environments.isEmpty, let environment = event.environment, !environments.contains(environment) { return false }
        return true
    }

    public var forwardsNotifications: Bool { appStoreNotifications ?? false }

    /// The secrets a delivery at `now` is signed with: the current one and any previous one
    /// still inside its rotation window.
    public func signingSecrets(at now: Date) -> [String] {
        secrets.filter { ($0.expiresAt ?? .distantFuture) > now }.map(\.value)
    }
}
