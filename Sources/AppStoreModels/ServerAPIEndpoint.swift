/// The App Store Server API's endpoints, with the request limits Apple publishes for each
/// ("Identifying rate limits"): per app, in requests per second in production, enforced over an
/// hour; the sandbox allows a tenth of them. Apple may change them at any time, so a caller
/// throttles to them and still honours a 429's `Retry-After`.
public enum ServerAPIEndpoint: String, CaseIterable, Sendable, Hashable, Codable {
    case finishTransaction = "finish_transaction"
    case getAppTransactionInfo = "app_transaction_info"
    case getTransactionInfo = "transaction_info"
    case getTransactionHistory = "transaction_history"
    case getAllSubscriptionStatuses = "subscription_statuses"
    case sendConsumptionInformation = "consumption_v2"
    case sendConsumptionInformationV1 = "consumption_v1"
    case getNotificationHistory = "notification_history"
    case extendSubscriptionRenewalDate = "extend_renewal_date"
    case setAppAccountToken = "set_app_account_token"
    case lookUpOrderId = "look_up_order_id"
    case getRefundHistory = "refund_history"
    case extendRenewalDatesForAllActiveSubscribers = "extend_renewal_dates_mass"
    /// Not in Apple's table; given the limit of the request it follows.
    case getRenewalDateExtensionStatus = "extend_renewal_dates_mass_status"
    case requestTestNotification = "test_notification"
    case getTestNotificationStatus = "test_notification_status"
    /// Retention Messaging's configuration calls (messages, images, default messages, the
    /// realtime URL, the performance test). Apple publishes no limits for these: the Server
    /// API's common 50 per second is assumed, and a 429's `Retry-After` still rules.
    case retentionConfiguration = "retention_configuration"

    /// Apple's published production limit, in requests per second.
    public var productionRequestsPerSecond: Int {
        switch self {
        case .finishTransaction, .getAppTransactionInfo, .getTransactionInfo, .getTransactionHistory, .getAllSubscriptionStatuses,
            .sendConsumptionInformation, .sendConsumptionInformationV1, .getNotificationHistory, .retentionConfiguration:
            50
        case .extendSubscriptionRenewalDate, .setAppAccountToken: 20
        case .lookUpOrderId, .getRefundHistory: 10
        case .extendRenewalDatesForAllActiveSubscribers, .getRenewalDateExtensionStatus, .requestTestNotification,
            .getTestNotificationStatus:
            1
        }
    }

    /// Whether a request that went unanswered (a timeout, a dropped connection) may be sent
    /// again. Each Extend a Subscription Renewal Date call adds its days again, and each Request a
    /// Test Notification call sends another notification; Apple may have acted on the one whose
    /// answer was lost, so sending it again risks doing it twice. Every other call reads, or
    /// sets a value (or is keyed by its request identifier), and is safe to repeat.
    public var safeToResendUnanswered: Bool {
        switch self {
        case .extendSubscriptionRenewalDate, .requestTestNotification: false
        default: true
        }
    }

    /// The published limit in `environment`: the sandbox's is 10% of production's.
    public func requestsPerSecond(in environment: AppStoreEnvironment) -> Double {
        let production = Double(productionRequestsPerSecond)
        return environment == .sandbox ? production / 10 : production
    }
}
