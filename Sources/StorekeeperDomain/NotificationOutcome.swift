import AppStoreModels
public import StorekeeperWire

/// What ingesting an App Store Server Notification decided, as stored with it, answered to the
/// caller and counted in `storekeeper_notifications_total`. A string-backed value: a rejected
/// transaction's outcome is its `FailureReason`, and stored rows may hold values not listed here.
public struct NotificationOutcome: RawStringValue, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// Its transaction (or V1 receipt) went to the owner of its original transaction.
    public static let submitted = NotificationOutcome(rawValue: "submitted")
    /// Nobody claimed the purchase yet; their own receipt or transaction will grant it.
    public static let unowned = NotificationOutcome(rawValue: "unowned")
    /// A V2 notification that carries no signed transaction.
    public static let noTransaction = NotificationOutcome(rawValue: "no_transaction")
    /// A V1 notification without a latest receipt.
    public static let noReceipt = NotificationOutcome(rawValue: "no_receipt")
    /// Apple's TEST notification.
    public static let test = NotificationOutcome(rawValue: "test")
    /// CONSUMPTION_REQUEST: recorded for the developer's answer; nothing changed yet.
    public static let consumptionRequested = NotificationOutcome(rawValue: "consumption_requested")
    /// RESCIND_CONSENT: each app user holding the customer's purchases was told.
    public static let consentRescinded = NotificationOutcome(rawValue: "consent_rescinded")
    /// RESCIND_CONSENT for a customer none of whose purchases is stored.
    public static let consentRescindedUnknownCustomer = NotificationOutcome(rawValue: "consent_rescinded_unknown_customer")
    /// RESCIND_CONSENT without a signed app transaction.
    public static let noAppTransaction = NotificationOutcome(rawValue: "no_app_transaction")
    /// RESCIND_CONSENT whose signed app transaction could not be read.
    public static let appTransactionUnreadable = NotificationOutcome(rawValue: "app_transaction_unreadable")
    /// RESCIND_CONSENT whose app transaction names no `appTransactionId`.
    public static let noAppTransactionId = NotificationOutcome(rawValue: "no_app_transaction_id")
    /// Answered for a notification stored before (never stored itself).
    public static let duplicate = NotificationOutcome(rawValue: "duplicate")

    /// A signed transaction (or app transaction) that must not be granted: its failure code.
    public static func rejected(_ reason: FailureReason) -> NotificationOutcome {
        NotificationOutcome(rawValue: reason.rawValue)
    }
}
