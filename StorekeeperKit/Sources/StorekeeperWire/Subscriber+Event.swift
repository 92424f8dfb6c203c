import Foundation

extension Subscriber {
    /// One change of what a subscriber owns, as the feed serves it and a webhook posts it.
    /// Ignore types you do not know: a newer server emits more.
    public struct Event: WireMessage {
        public static let location = WireLocation.schema("SubscriberEvent")

        /// Facts that only some types carry.
        public struct Details: Codable, Hashable, Sendable {
            public var reason: String?
            public var expirationReason: String?
            public var previousProductId: String?
            public var fromAppUserId: String?
            public var toAppUserId: String?
            public var ownerAppUserId: String?
            public var expiresDate: Date?
            public var gracePeriodExpiresDate: Date?
            public var credits: Int?
            public var verificationId: String?
            public var appTransactionId: String?
            public var revocationType: String?
            public var revocationPercentage: Int?
            public var appleEndpoint: String?
            public var downSince: Date?
            public var entitlementId: String?
            public var grantId: String?
            public var refundPreference: String?
            public var spendId: String?
            public var creditBalance: Int?
            public var experimentId: String?
            public var arm: Int?
            public var offeringId: String?

            public init(reason: String? = nil, expiresDate: Date? = nil, credits: Int? = nil, entitlementId: String? = nil) {
                self.reason = reason
                self.expiresDate = expiresDate
                self.credits = credits
                self.entitlementId = entitlementId
            }
        }

        /// Stable and unique: the same change always has the same id (deduplicate by it).
        public var id: String
        public var type: String
        public var appId: String
        public var environment: String?
        public var appUserId: String
        public var productId: String?
        public var transactionId: String?
        public var originalTransactionId: String?
        public var priceMicros: Int64?
        public var currency: String?
        public var occurredAt: Date
        public var recordedAt: Date
        /// 1, 2, 3 … per app user of an app, in commit order.
        public var sequence: Int64
        /// `receipt`, `signed_transaction`, `notification` or `server_api`; absent for events no
        /// evidence caused.
        public var source: String?
        public var details: Details?
        /// What the subscriber owns once this event's change committed.
        public var entitlements: Subscriber?

        public init(
            id: String, type: String, appId: String, environment: String? = nil, appUserId: String, occurredAt: Date, recordedAt: Date,
            sequence: Int64
        ) {
            self.id = id
            self.type = type
            self.appId = appId
            self.environment = environment
            self.appUserId = appUserId
            self.occurredAt = occurredAt
            self.recordedAt = recordedAt
            self.sequence = sequence
        }
    }
}

/// A page of the event feed (`GET /v1/events`, `GET /v1/subscribers/{id}/events`).
public struct EventPage: WireMessage {
    public static let location = WireLocation.schema("EventPage")

    public struct Entry: Codable, Hashable, Sendable {
        public var cursor: Int64
        public var event: Subscriber.Event

        public init(cursor: Int64, event: Subscriber.Event) {
            self.cursor = cursor
            self.event = event
        }
    }

    public var events: [Entry]
    /// Pass as `after` to read on: the last event's cursor or sequence, or `after` when the page
    /// is empty.
    public var nextCursor: Int64

    public init(events: [Entry], nextCursor: Int64) {
        self.events = events
        self.nextCursor = nextCursor
    }
}
