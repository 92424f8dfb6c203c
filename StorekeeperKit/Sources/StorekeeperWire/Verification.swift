import Foundation

/// A verification as the API answers it (`POST /v1/receipts`, `POST /v1/transactions`,
/// `GET /v1/verifications/{id}`): the server writes it from its record, the SDK reads whether
/// this transaction was granted to this user.
public struct Verification: WireMessage {
    public static let location = WireLocation.schema("Verification")

    /// The verification's lifecycle state. Open: a state a newer server sends decodes too.
    public struct State: RawStringValue {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        public static let pending = State(rawValue: "pending")
        public static let verifying = State(rawValue: "verifying")
        public static let retryScheduled = State(rawValue: "retry_scheduled")
        public static let verified = State(rawValue: "verified")
        public static let invalid = State(rawValue: "invalid")
        public static let configurationError = State(rawValue: "configuration_error")
    }

    public var id: String
    public var appUserId: String
    public var state: State
    /// Why invalid, held or retrying (`receipt_not_authentic`, `apple_http_503`, …).
    public var reason: String?
    public var attempts: Int
    /// Apple's `status` of each attempt.
    public var appleStatuses: [Int]
    public var environment: String?
    /// Only while `retry_scheduled`.
    public var nextAttemptAt: Date?
    public var createdAt: Date
    public var updatedAt: Date
    public var finalizedAt: Date?
    /// Not final after the server's `flagAfterSeconds`.
    public var flagged: Bool
    public var grant: Grant?

    public init(
        id: String, appUserId: String, state: State, reason: String? = nil, attempts: Int, appleStatuses: [Int], environment: String? = nil,
        nextAttemptAt: Date? = nil, createdAt: Date, updatedAt: Date, finalizedAt: Date? = nil, flagged: Bool, grant: Grant? = nil
    ) {
        self.id = id
        self.appUserId = appUserId
        self.state = state
        self.reason = reason
        self.attempts = attempts
        self.appleStatuses = appleStatuses
        self.environment = environment
        self.nextAttemptAt = nextAttemptAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.finalizedAt = finalizedAt
        self.flagged = flagged
        self.grant = grant
    }

    /// What the verification granted, revoked or refused (transaction ids).
    public struct Grant: WireMessage {
        public static let location = WireLocation.schema("GrantSummary")

        /// A transaction not granted because another app user owns its original transaction.
        public struct Conflict: Codable, Sendable, Hashable {
            public static let ownedByAnotherUser = "original_transaction_owned_by_another_user"
            public var code: String
            public var transactionId: String
            public var originalTransactionId: String
            public var productId: String

            public init(code: String, transactionId: String, originalTransactionId: String, productId: String) {
                self.code = code
                self.transactionId = transactionId
                self.originalTransactionId = originalTransactionId
                self.productId = productId
            }
        }

        /// An original transaction moved to this user (`bindingPolicy` `transfer`).
        public struct Transfer: Codable, Sendable, Hashable {
            public var originalTransactionId: String
            public var fromAppUserId: String
            public var toAppUserId: String

            public init(originalTransactionId: String, fromAppUserId: String, toAppUserId: String) {
                self.originalTransactionId = originalTransactionId
                self.fromAppUserId = fromAppUserId
                self.toAppUserId = toAppUserId
            }
        }

        public var granted: [String]
        public var alreadyGranted: [String]
        public var revoked: [String]
        public var conflicts: [Conflict]
        public var transfers: [Transfer]
        public var unknownProducts: [String]
        public var creditsAdded: Int
        public var subscriptionsUpdated: [String]
        /// Refunds undone by a REFUND_REVERSED (absent when none).
        public var reinstated: [String]?

        public init(
            granted: [String] = [], alreadyGranted: [String] = [], revoked: [String] = [], conflicts: [Conflict] = [], transfers: [Transfer] = [],
            unknownProducts: [String] = [], creditsAdded: Int = 0, subscriptionsUpdated: [String] = [], reinstated: [String]? = nil
        ) {
            self.granted = granted
            self.alreadyGranted = alreadyGranted
            self.revoked = revoked
            self.conflicts = conflicts
            self.transfers = transfers
            self.unknownProducts = unknownProducts
            self.creditsAdded = creditsAdded
            self.subscriptionsUpdated = subscriptionsUpdated
            self.reinstated = reinstated
        }
    }
}
