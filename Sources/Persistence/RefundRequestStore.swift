public import Foundation
public import StorekeeperDomain

/// The kind of the job that answers a refund request; its payload is the notification's UUID.
public let answerRefundRequestJobKind = "answer_refund_request"

/// Refund requests (CONSUMPTION_REQUEST) and their answers (docs/REFUNDS.md). A request is stored
/// by `NotificationStore.recordNotification` with its notification.
public protocol RefundRequestStore: Sendable {
    func refundRequest(appId: String, notificationUUID: String) async throws -> RefundRequest?
    /// The request a job answers.
    func refundRequest(jobId: String) async throws -> RefundRequest?
    /// Moves a pending request to `request`'s state with what it says (answer, note, time) and
    /// records `events`, in one transaction, only while it is still pending. False when it was
    /// not (another run ended it first): nothing is written.
    func finishRefundRequest(_ request: RefundRequest, events: EventBatch?, now: Date) async throws -> Bool
    /// An app's requests, newest first, those of one transaction when given.
    func refundRequests(appId: String, transactionId: String?, limit: Int) async throws -> [RefundRequest]
    /// One holder's requests that may still end in a refund (pending or sent), oldest first
    /// (by when Apple asked, then notification id): what an answer to one of them must count
    /// as already claimed by the others.
    func openRefundRequests(appId: String, appUserId: String) async throws -> [RefundRequest]
}
