public import AppStoreModels
public import Foundation
public import StorekeeperDomain

/// Apple's V2 notification verified for the app it names: the payload's signature and chain, the
/// app by bundle id and its claims, the nested transaction and renewal info, a rescinded consent's
/// app transaction. The server's adapter is `NotificationVerifier` over its
/// `SignedTransactionGate`; it throws (and the delivery is refused, Apple sends it again) for a
/// payload that is not Apple's, for no configured app, or that fails a check.
public protocol NotificationVerifying: Sendable {
    func verify(_ signedPayload: String, now: Date) async throws -> VerifiedNotification
}

/// What a verified V2 notification says, with the app settings that decide what it leads to.
public struct VerifiedNotification: Sendable {
    public var appId: String
    public var refundPolicy: RefundPolicy
    public var consentPolicy: RescindConsentPolicy
    public var type: NotificationType
    public var uuid: String
    public var payload: NotificationPayload
    /// The SHA-256 of the signed payload as received (hex): its identity as evidence.
    public var evidenceHash: String
    public var transaction: IngestNotification.TransactionFact?
    /// RESCIND_CONSENT's app transaction; nil for every other type.
    public var consent: IngestNotification.Consent?

    public init(
        appId: String, refundPolicy: RefundPolicy, consentPolicy: RescindConsentPolicy, type: NotificationType, uuid: String,
        payload: NotificationPayload, evidenceHash: String, transaction: IngestNotification.TransactionFact?,
        consent: IngestNotification.Consent?
    ) {
        self.appId = appId
        self.refundPolicy = refundPolicy
        self.consentPolicy = consentPolicy
        self.type = type
        self.uuid = uuid
        self.payload = payload
        self.evidenceHash = evidenceHash
        self.transaction = transaction
        self.consent = consent
    }
}

/// A V2 notification however it arrived (Apple's POST, or the gap-fill reading Apple's history):
/// verified, classified (`IngestNotification.classify`) and stored once with what it causes
/// (`IngestNotification`). Nothing in it is believed before the verifier vouched for it.
public struct ReceiveNotification: Sendable {
    let ingest: IngestNotification

    public init(ingest: IngestNotification) {
        self.ingest = ingest
    }

    /// The notification as stored, and what storing it did.
    public func callAsFunction(
        _ signedPayload: String, verifier: any NotificationVerifying, now: Date
    ) async throws -> (notification: IngestNotification.Notification, result: IngestNotification.Result) {
        let verified = try await verifier.verify(signedPayload, now: now)
        let payload = verified.payload
        let (purchase, originalTransactionId) = IngestNotification.classify(
            type: verified.type, transaction: verified.transaction, consumptionRequestReason: payload.data?.consumptionRequestReason,
            refundPolicy: verified.refundPolicy, signedPayload: signedPayload, evidenceHash: verified.evidenceHash)
        var notification = IngestNotification.Notification(
            appId: verified.appId, notificationUUID: verified.uuid, notificationType: verified.type.rawValue, subtype: payload.subtype,
            signedDate: payload.signedDate?.date, originalTransactionId: originalTransactionId,
            environment: payload.environment?.storageName, payload: signedPayload, version: .v2, purchase: purchase,
            consent: verified.consent)
        notification.consentPolicy = verified.consentPolicy
        return (notification, try await ingest(notification, now: now))
    }
}
