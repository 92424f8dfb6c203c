public import Foundation

// Bodies of the App Store Server API (`/inApps/v1…`, `/inApps/v2…`). Every field is optional
// so a field Apple drops or adds never breaks decoding; enumerations are open
// (`AppStoreEnvironment`) and signed content stays a JWS string, verified by its reader. A
// field of the wrong JSON type (an `appAppleId` that is a string) is a decoding error.

/// `GET /inApps/v1/transactions/{transactionId}`.
public struct TransactionInfoResponse: Codable, Hashable, Sendable {
    public var signedTransactionInfo: String?
    public init(signedTransactionInfo: String?) { self.signedTransactionInfo = signedTransactionInfo }
}

/// `GET /inApps/v1/transactions/appTransactions/{transactionId}`: the customer's app
/// transaction, signed.
public struct AppTransactionInfoResponse: Codable, Hashable, Sendable {
    public var signedAppTransactionInfo: String?
    public init(signedAppTransactionInfo: String?) { self.signedAppTransactionInfo = signedAppTransactionInfo }
}

/// `PUT /inApps/v1/transactions/{originalTransactionId}/appAccountToken`: the token to set.
public struct UpdateAppAccountTokenRequest: Codable, Hashable, Sendable {
    public var appAccountToken: String?
    public init(appAppAccountToken token: String?) { appAccountToken = token }
}

/// `GET /inApps/v2/history/{transactionId}`: one page of a customer's transactions.
public struct HistoryResponse: Codable, Hashable, Sendable {
    /// Pass back as `revision` to get the next page.
    public var revision: String?
    public var hasMore: Bool?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var environment: AppStoreEnvironment?
    public var signedTransactions: [String]?

    public init(
        revision: String?, hasMore: Bool?, bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?,
        signedTransactions: [String]?
    ) {
        self.revision = revision
        self.hasMore = hasMore
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.environment = environment
        self.signedTransactions = signedTransactions
    }
}

/// `GET /inApps/v1/subscriptions/{transactionId}`: the latest transaction and renewal info of
/// every subscription of the customer, by subscription group.
public struct StatusResponse: Codable, Hashable, Sendable {
    public struct Group: Codable, Hashable, Sendable {
        public var subscriptionGroupIdentifier: String?
        public var lastTransactions: [LastTransaction]?
        public init(subscriptionGroupIdentifier: String?, lastTransactions: [LastTransaction]?) {
            self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
            self.lastTransactions = lastTransactions
        }
    }

    public struct LastTransaction: Codable, Hashable, Sendable {
        /// 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked; others kept as sent.
        public var status: Int?
        public var originalTransactionId: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public init(status: Int?, originalTransactionId: String?, signedTransactionInfo: String?, signedRenewalInfo: String?) {
            self.status = status
            self.originalTransactionId = originalTransactionId
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
        }
    }

    public var environment: AppStoreEnvironment?
    public var bundleId: String?
    public var appAppleId: Int64?
    public var data: [Group]?

    public init(environment: AppStoreEnvironment?, bundleId: String?, appAppleId: Int64?, data: [Group]?) {
        self.environment = environment
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.data = data
    }
}

/// `GET /inApps/v2/refund/lookup/{transactionId}`.
public struct RefundHistoryResponse: Codable, Hashable, Sendable {
    public var signedTransactions: [String]?
    public var revision: String?
    public var hasMore: Bool?
    public init(signedTransactions: [String]?, revision: String?, hasMore: Bool?) {
        self.signedTransactions = signedTransactions
        self.revision = revision
        self.hasMore = hasMore
    }
}

/// `GET /inApps/v1/lookup/{orderId}`: status 0 valid, 1 invalid order id.
public struct OrderLookupResponse: Codable, Hashable, Sendable {
    public var status: Int?
    public var signedTransactions: [String]?
    public init(status: Int?, signedTransactions: [String]?) {
        self.status = status
        self.signedTransactions = signedTransactions
    }
}

/// Body of `POST /inApps/v1/notifications/history`. Dates are UNIX milliseconds.
public struct NotificationHistoryRequest: Codable, Hashable, Sendable {
    public var startDate: Int64
    public var endDate: Int64
    public var notificationType: String?
    public var notificationSubtype: String?
    public var transactionId: String?
    public var onlyFailures: Bool?

    public init(
        startDate: Date, endDate: Date, notificationType: String? = nil, notificationSubtype: String? = nil,
        transactionId: String? = nil, onlyFailures: Bool? = nil
    ) {
        self.startDate = Int64((startDate.timeIntervalSince1970 * 1000).rounded(.down))
        self.endDate = Int64((endDate.timeIntervalSince1970 * 1000).rounded(.up))
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionId = transactionId
        self.onlyFailures = onlyFailures
    }
}

/// One notification Apple sent (or tried to send), with each delivery attempt.
public struct NotificationHistoryItem: Codable, Hashable, Sendable {
    public struct SendAttempt: Codable, Hashable, Sendable {
        public var attemptDate: Int64?
        /// `SUCCESS`, `TIMED_OUT`, `NO_RESPONSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …; kept as sent.
        public var sendAttemptResult: String?
        public init(attemptDate: Int64?, sendAttemptResult: String?) {
            self.attemptDate = attemptDate
            self.sendAttemptResult = sendAttemptResult
        }
    }

    public var signedPayload: String?
    public var sendAttempts: [SendAttempt]?
    public init(signedPayload: String?, sendAttempts: [SendAttempt]?) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

public struct NotificationHistoryResponse: Codable, Hashable, Sendable {
    /// Pass back as the `paginationToken` query parameter, with the same body, for the next page.
    public var paginationToken: String?
    public var hasMore: Bool?
    public var notificationHistory: [NotificationHistoryItem]?
    public init(paginationToken: String?, hasMore: Bool?, notificationHistory: [NotificationHistoryItem]?) {
        self.paginationToken = paginationToken
        self.hasMore = hasMore
        self.notificationHistory = notificationHistory
    }
}

/// `POST /inApps/v1/notifications/test`.
public struct SendTestNotificationResponse: Codable, Hashable, Sendable {
    public var testNotificationToken: String?
    public init(testNotificationToken: String?) { self.testNotificationToken = testNotificationToken }
}

/// `GET /inApps/v1/notifications/test/{token}`.
public struct CheckTestNotificationResponse: Codable, Hashable, Sendable {
    public var signedPayload: String?
    public var sendAttempts: [NotificationHistoryItem.SendAttempt]?
    public init(signedPayload: String?, sendAttempts: [NotificationHistoryItem.SendAttempt]?) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }
}

/// Body of `PUT /inApps/v1/transactions/consumption/{transactionId}`, the answer to a
/// CONSUMPTION_REQUEST notification. Integers are Apple's documented codes.
/// `PUT /inApps/v2/transactions/consumption/{transactionId}` (2025): fewer fields, enums as
/// strings, and a consumed share in milliunits (0-100,000). Apple requires consent, whether a
/// sample was provided and the delivery status; they are optional here so that a missing one
/// gets Apple's own error code, not a generic one.
public struct ConsumptionRequestV2: Codable, Hashable, Sendable {
    public var customerConsented: Bool
    public var sampleContentProvided: Bool?
    /// `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`, `UNDELIVERED_SERVER_OUTAGE`, `UNDELIVERED_OTHER`.
    public var deliveryStatus: String?
    public var consumptionPercentage: Int?
    /// `DECLINE`, `GRANT_FULL`, `GRANT_PRORATED`.
    public var refundPreference: String?

    public static let deliveryStatuses: Set<String> = [
        "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER",
    ]
    public static let refundPreferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]

    public init(
        customerConsented: Bool, sampleContentProvided: Bool? = nil, deliveryStatus: String? = nil, consumptionPercentage: Int? = nil,
        refundPreference: String? = nil
    ) {
        self.customerConsented = customerConsented
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}

public struct ConsumptionRequest: Codable, Hashable, Sendable {
    public var customerConsented: Bool
    public var consumptionStatus: Int
    public var platform: Int
    public var sampleContentProvided: Bool
    public var deliveryStatus: Int
    public var appAccountToken: String
    public var accountTenure: Int
    public var playTime: Int
    public var lifetimeDollarsRefunded: Int
    public var lifetimeDollarsPurchased: Int
    public var userStatus: Int
    public var refundPreference: Int?

    public init(
        customerConsented: Bool, consumptionStatus: Int = 0, platform: Int = 1, sampleContentProvided: Bool = false,
        deliveryStatus: Int = 0, appAccountToken: String = "", accountTenure: Int = 0, playTime: Int = 0,
        lifetimeDollarsRefunded: Int = 0, lifetimeDollarsPurchased: Int = 0, userStatus: Int = 0, refundPreference: Int? = nil
    ) {
        self.customerConsented = customerConsented
        self.consumptionStatus = consumptionStatus
        self.platform = platform
        self.sampleContentProvided = sampleContentProvided
        self.deliveryStatus = deliveryStatus
        self.appAccountToken = appAccountToken
        self.accountTenure = accountTenure
        self.playTime = playTime
        self.lifetimeDollarsRefunded = lifetimeDollarsRefunded
        self.lifetimeDollarsPurchased = lifetimeDollarsPurchased
        self.userStatus = userStatus
        self.refundPreference = refundPreference
    }
}

/// Body of `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`.
public struct ExtendRenewalDateRequest: Codable, Hashable, Sendable {
    /// 1...90 days.
    public var extendByDays: Int
    /// 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.
    public var extendReasonCode: Int
    /// Echoed in Apple's answer to match it with the request; Apple documents no deduplication
    /// by it for a single subscription, so an unanswered call is not sent again.
    public var requestIdentifier: String
    public init(extendByDays: Int, extendReasonCode: Int, requestIdentifier: String) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
    }
}

/// Body of `POST /inApps/v1/subscriptions/extend/mass`: every active subscriber to a product,
/// optionally in some storefronts only.
public struct MassExtendRenewalDateRequest: Codable, Hashable, Sendable {
    public var extendByDays: Int
    public var extendReasonCode: Int
    public var requestIdentifier: String
    public var productId: String
    public var storefrontCountryCodes: [String]?
    public init(extendByDays: Int, extendReasonCode: Int, requestIdentifier: String, productId: String, storefrontCountryCodes: [String]? = nil) {
        self.extendByDays = extendByDays
        self.extendReasonCode = extendReasonCode
        self.requestIdentifier = requestIdentifier
        self.productId = productId
        self.storefrontCountryCodes = storefrontCountryCodes
    }
}

public struct MassExtendRenewalDateResponse: Codable, Hashable, Sendable {
    public var requestIdentifier: String?
    public init(requestIdentifier: String?) { self.requestIdentifier = requestIdentifier }
}

/// `GET /inApps/v1/subscriptions/extend/mass/{productId}/{requestIdentifier}`: Apple works
/// through a mass extension on its own time; this is how far it got.
public struct MassExtendRenewalDateStatusResponse: Codable, Hashable, Sendable {
    public var requestIdentifier: String?
    public var complete: Bool?
    public var completeDate: Int64?
    public var succeededCount: Int64?
    public var failedCount: Int64?
    public init(requestIdentifier: String?, complete: Bool?, completeDate: Int64?, succeededCount: Int64?, failedCount: Int64?) {
        self.requestIdentifier = requestIdentifier
        self.complete = complete
        self.completeDate = completeDate
        self.succeededCount = succeededCount
        self.failedCount = failedCount
    }
}

public struct ExtendRenewalDateResponse: Codable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var success: Bool?
    public var effectiveDate: Int64?
    public init(originalTransactionId: String?, webOrderLineItemId: String?, success: Bool?, effectiveDate: Int64?) {
        self.originalTransactionId = originalTransactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.success = success
        self.effectiveDate = effectiveDate
    }
}

/// Apple's error body: `{"errorCode": 4040010, "errorMessage": "Transaction id not found."}`.
public struct ServerAPIErrorBody: Codable, Hashable, Sendable {
    public var errorCode: Int?
    public var errorMessage: String?
    public init(errorCode: Int?, errorMessage: String?) {
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }

    /// Codes Apple documents as worth retrying later (account, app or original transaction not
    /// yet known, internal retryable error).
    public static let retryableCodes: Set<Int> = [4_040_002, 4_040_004, 4_040_006, 5_000_001]
    public static let transactionIdNotFound = 4_040_010
    public static let originalTransactionIdNotFound = 4_040_005
    public static let rateLimitExceeded = 4_290_000
}
