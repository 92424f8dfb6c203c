import Foundation

/// The device's app transaction, posted for its user (`POST /v1/subscribers/{appUserId}/app-transaction`).
public struct AppTransactionSubmission: WireMessage {
    public static let location = WireLocation.request(method: "post", path: "/v1/subscribers/{appUserId}/app-transaction")
    /// StoreKit's `AppTransaction.shared` as a compact JWS.
    public var signedAppTransaction: String

    public init(signedAppTransaction: String) { self.signedAppTransaction = signedAppTransaction }
}

/// How the customer obtained the app, as the server verified and kept it (the newest Apple
/// signed): the version first obtained, to grandfather those who bought the app before it went free.
public struct AppTransactionInfo: WireMessage {
    public static let location = WireLocation.schema("CustomerAppTransaction")
    public var appTransactionId: String
    /// `Production` or `Sandbox`.
    public var environment: String
    /// The app version first obtained (the build number on iOS, as Apple states it).
    public var originalAppVersion: String?
    public var originalPurchaseDate: Date?
    /// `iOS`, `macOS`, `tvOS` or `visionOS`; nil from older devices.
    public var originalPlatform: String?
    /// When Apple signed the copy the server keeps.
    public var signedDate: Date
    /// When the server stored it (absent from servers before the wire module).
    public var receivedAt: Date?

    public init(
        appTransactionId: String, environment: String, originalAppVersion: String?, originalPurchaseDate: Date?, originalPlatform: String?,
        signedDate: Date, receivedAt: Date?
    ) {
        self.appTransactionId = appTransactionId
        self.environment = environment
        self.originalAppVersion = originalAppVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.originalPlatform = originalPlatform
        self.signedDate = signedDate
        self.receivedAt = receivedAt
    }
}

/// What the user did in the app's customer center (`POST …/customer-center-actions`), under a
/// key of the app's making so a report sent twice is recorded once.
public struct CustomerCenterActionReport: WireMessage {
    public static let location = WireLocation.request(method: "post", path: "/v1/subscribers/{appUserId}/customer-center-actions")
    public static let manageSubscriptionsShown = "manage_subscriptions_shown"
    public static let refundRequested = "refund_requested"

    public var id: String
    /// `manage_subscriptions_shown` or `refund_requested`.
    public var action: String
    /// The transaction a refund was asked for.
    public var transactionId: String?
    /// What the refund request sheet came to: `requested` or `cancelled`.
    public var outcome: String?

    public init(id: String, action: String, transactionId: String? = nil, outcome: String? = nil) {
        self.id = id
        self.action = action
        self.transactionId = transactionId
        self.outcome = outcome
    }
}

/// The event a customer-center report was recorded as.
public struct CustomerCenterActionRecorded: WireMessage {
    public static let location = WireLocation.answer(method: "post", path: "/v1/subscribers/{appUserId}/customer-center-actions", status: 200)
    public var eventId: String
    /// `manage_subscriptions_shown_in_app` or `refund_requested_in_app`.
    public var type: String

    public init(eventId: String, type: String) {
        self.eventId = eventId
        self.type = type
    }
}
