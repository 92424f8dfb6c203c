public import Foundation

/// One CONSUMPTION_REQUEST: a customer asked Apple to refund `transactionId`, and Apple waits
/// for consumption information until `deadline` (12 hours). Stored with the notification, in
/// its transaction; answered by a durable job (`RefundRequestLifecycle`).
public struct RefundRequest: Codable, Hashable, Sendable {
    public enum State: String, Codable, Sendable, CaseIterable {
        /// Waiting for its answer to be sent.
        case pending
        /// Apple accepted the answer (`answer`, `answeredAt`).
        case sent
        /// Nothing will be sent (`note` says why: the policy is off, no consent).
        case skipped
        /// The deadline passed before Apple took an answer (`note`: the last failure).
        case expired
        /// Apple refused the answer for good (`note`: its error).
        case failed
    }

    public var appId: String
    public var notificationUUID: String
    public var transactionId: String
    public var originalTransactionId: String
    /// Who holds the purchase; nil when nobody has claimed it.
    public var appUserId: String?
    public var environment: String
    /// Apple's `consumptionRequestReason` (`UNINTENDED_PURCHASE`, `FULFILLMENT_ISSUE`, …), as sent.
    public var reason: String?
    public var requestedAt: Date
    public var deadline: Date
    public var state: State
    /// What was sent (state `sent`).
    public var answer: ConsumptionAnswer?
    /// Why that preference (the rule that matched), or why nothing was sent.
    public var note: String?
    public var answeredAt: Date?
    /// The job that answers it.
    public var jobId: String?

    /// How long Apple waits for consumption information.
    public static let answerWindow: TimeInterval = 12 * 3_600

    public init(
        appId: String, notificationUUID: String, transactionId: String, originalTransactionId: String, appUserId: String?,
        environment: String, reason: String?, requestedAt: Date, state: State, note: String? = nil, jobId: String? = nil
    ) {
        self.appId = appId
        self.notificationUUID = notificationUUID
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.appUserId = appUserId
        self.environment = environment
        self.reason = reason
        self.requestedAt = requestedAt
        self.deadline = requestedAt.addingTimeInterval(Self.answerWindow)
        self.state = state
        self.note = note
        self.jobId = jobId
    }

    /// `refund_requested` when stored, `refund_request_answered` once Apple took the answer; ids
    /// from the notification, so a redelivery adds nothing.
    public func event(_ type: EventType, now: Date) -> SubscriberEvent? {
        guard let appUserId else { return nil }
        var details = SubscriberEvent.Details(reason: type == .refundRequested ? reason : note)
        details.refundPreference = answer?.refundPreference
        return SubscriberEvent(
            id: SubscriberEvent.id(type: type, subject: transactionId, cause: notificationUUID), type: type, appId: appId,
            environment: environment, appUserId: appUserId, transactionId: transactionId, originalTransactionId: originalTransactionId,
            occurredAt: type == .refundRequested ? requestedAt : (answeredAt ?? now), recordedAt: now, details: details)
    }
}

/// Send Consumption Information v2's body, as decided (the edge maps it to Apple's wire shape).
public struct ConsumptionAnswer: Codable, Hashable, Sendable {
    public var customerConsented: Bool
    /// `DELIVERED`, `UNDELIVERED_QUALITY_ISSUE`, `UNDELIVERED_WRONG_ITEM`, `UNDELIVERED_SERVER_OUTAGE`, `UNDELIVERED_OTHER`.
    public var deliveryStatus: String
    public var sampleContentProvided: Bool
    /// Milliunits of a percent (100000: all of it); nil when not known.
    public var consumptionPercentage: Int?
    /// `GRANT_FULL`, `GRANT_PRORATED`, `DECLINE`; nil: no preference.
    public var refundPreference: String?

    public init(
        customerConsented: Bool, deliveryStatus: String, sampleContentProvided: Bool, consumptionPercentage: Int?, refundPreference: String?
    ) {
        self.customerConsented = customerConsented
        self.deliveryStatus = deliveryStatus
        self.sampleContentProvided = sampleContentProvided
        self.consumptionPercentage = consumptionPercentage
        self.refundPreference = refundPreference
    }
}
