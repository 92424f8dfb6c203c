public import StorekeeperDomain

/// Everything one notification's transaction writes, as `IngestNotification` decided it.
public struct NotificationWrite: Sendable {
    public var record: NotificationRecord
    public var submission: DecidedSubmission?
    public var events: EventBatch?
    /// The endpoints (of the notification's app, as stored in the transaction) it is forwarded
    /// to, in the order stored: the adapter enqueues one delivery per id.
    public var forwards: @Sendable ([WebhookEndpoint]) -> [String]
    /// CONSUMPTION_REQUEST: the refund request, stored with the notification; a pending one gets
    /// its answering job (`answerRefundRequestJobKind`) in the same transaction.
    public var refundRequest: RefundRequest? = nil

    public init(
        record: NotificationRecord, submission: DecidedSubmission?, events: EventBatch?,
        forwards: @escaping @Sendable ([WebhookEndpoint]) -> [String]
    ) {
        self.record = record
        self.submission = submission
        self.events = events
        self.forwards = forwards
    }
}
