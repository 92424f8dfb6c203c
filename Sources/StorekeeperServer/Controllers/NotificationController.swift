import AppStoreCrypto
import AppStoreModels
import Crypto
import Foundation
import Hummingbird
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// App Store Server Notifications V2 for every configured app and both environments, on one
/// URL. Apple authenticates by signing: the signed payload is verified before anything is
/// stored, and the answer is 200 only after the notification is durably stored (with the grant
/// job its signed transaction causes, in the same transaction). A second delivery of the same
/// notification (Apple retries) changes nothing.
struct NotificationController {
    let context: ServerContext

    func register(on router: RouteTable) {
        router.group("v1").post("notifications/appstore") { request, _ in try await receive(request) }
    }

    struct Body: Decodable {
        var signedPayload: String?
        var notification_type: String?
    }

    /// V2 (`{"signedPayload": …}`) or, told apart by its `notification_type`, a legacy V1 body.
    func receive(_ request: Request) async throws -> Response {
        let buffer = try await context.body(request)
        let body = try StorekeeperJSON.decode(Body.self, from: buffer)
        let ingest = NotificationIngest(context: context)
        if let signed = body.signedPayload {
            return try StorekeeperJSON.response(try await ingest.ingest(signedPayload: signed))
        }
        guard body.notification_type != nil else {
            throw StorekeeperError(.invalidNotification, "expected {\"signedPayload\": …} (V2) or a V1 notification with notification_type")
        }
        return try StorekeeperJSON.response(try await ingest.ingestV1(Data(buffer.readableBytesView)))
    }
}

/// One V2 notification, however it arrived (Apple's POST, or the gap-fill reading Apple's
/// notification history): verified, stored once per (app, notificationUUID) together with the
/// grant job its signed transaction causes, in one transaction.
struct NotificationIngest {
    let context: ServerContext

    struct Answer: Encodable {
        var notificationUUID: String
        var notificationType: String
        var duplicate: Bool
        var outcome: String
        var verificationId: String?
    }

    /// A V1 notification: no signature, so nothing in it is believed. Its password must be the
    /// app's shared secret; its latest receipt is queued for the owner of its original
    /// transaction and verified like any receipt (locally, then by Apple). Stored once per body.
    func ingestV1(_ raw: Data) async throws -> Answer {
        guard let notification = try? JSONDecoder().decode(NotificationV1.self, from: raw), let type = notification.notificationType else {
            throw StorekeeperError(.invalidNotification, "not a V1 notification")
        }
        guard let app = context.apps.first(where: { $0.bundleId == notification.bundleId }) else {
            throw StorekeeperError(.unknownApp, "no configured app has bundle id '\(notification.bundleId ?? "(none)")'")
        }
        guard let secret = app.sharedSecret, KeyComparison.equal(secret, notification.password ?? "") else {
            context.metrics.increment("storekeeper_notifications_rejected_total", labels: ["reason": "v1_password_mismatch"])
            throw StorekeeperError(.notificationRejected, "v1_password_mismatch: the password is not this app's shared secret")
        }
        let now = context.now()
        let digest = sha256Hex(raw)
        let uuid = "v1-\(digest.prefix(32))"
        var outcome = "no_receipt"
        var submission: EvidenceSubmission?
        if let receipt = notification.latestReceipt {
            if let original = notification.originalTransactionId,
                let owner = try await context.store.owner(appId: app.id, originalTransactionId: original)
            {
                outcome = "submitted"
                submission = EvidenceSubmission(
                    appId: app.id, appUserId: owner, evidenceHash: "\(digest)-v1", evidence: .receipt(base64: receipt),
                    hints: ["notification": uuid])
            } else {
                outcome = "unowned"
            }
        }
        let record = NotificationRecord(
            appId: app.id, notificationUUID: uuid, notificationType: type, subtype: nil, signedDate: nil,
            originalTransactionId: notification.originalTransactionId, environment: notification.environment?.storageName,
            payload: String(decoding: raw, as: UTF8.self), outcome: outcome)
        return try await store(record, submission: submission, version: "1", now: now)
    }

    /// One transaction: the notification (once per UUID) and the job it causes; then the answer.
    private func store(
        _ record: NotificationRecord, submission: EvidenceSubmission?, events: EventBatch? = nil, version: String, now: Date
    ) async throws -> Answer {
        let decided = submission.map { DecidedSubmission($0, decide: SubmitEvidence.decision(for: $0)) }
        let result = try await context.store.recordNotification(record, submission: decided, events: events, now: now)
        if result.verification != nil { context.signal.wake() }
        context.metrics.increment(
            "storekeeper_notifications_total",
            labels: ["type": record.notificationType, "version": version, "outcome": result.created ? record.outcome : "duplicate"])
        return Answer(
            notificationUUID: record.notificationUUID, notificationType: record.notificationType, duplicate: !result.created,
            outcome: record.outcome, verificationId: result.verification?.id)
    }

    func ingest(signedPayload: String) async throws -> Answer {
        let now = context.now()
        let verdict: SignedDataVerdict
        do {
            verdict = try await context.signedTransactionGate.verifier.verify(
                signedPayload, expecting: .init(), time: context.signedTransactionGate.validationTime(now: now))
        } catch let error as SignedDataError {
            throw StorekeeperError(.invalidNotification, "not a signed notification (\(error.code)): \(error.message)")
        }
        if let first = verdict.failures.first {
            context.metrics.increment("storekeeper_notifications_rejected_total", labels: ["reason": first.code])
            throw StorekeeperError(.notificationRejected, "\(first.code): \(verdict.failures.map(\.description).joined(separator: "; "))")
        }
        guard let payload = SignedTransactionGate.notificationPayload(verdict), let type = payload.notificationType,
            let uuid = payload.notificationUUID
        else { throw StorekeeperError(.invalidNotification, "the signed payload is not a V2 notification") }
        // The one notification verifier (the grant job uses it too): the app by bundle id, the
        // nested renewal info and signed transaction verified for it.
        let verified: SignedTransactionGate.VerifiedNotification
        switch await context.signedTransactionGate.notification(payload, apps: context.apps, now: now) {
        case .verified(let notification): verified = notification
        case .unknownApp(let bundleId):
            throw StorekeeperError(.unknownApp, "no configured app has bundle id '\(bundleId ?? "(none)")'")
        case .wrongAppAppleId(let expected, let found):
            let code = FailureReason.jwsWrongAppAppleId.rawValue
            context.metrics.increment("storekeeper_notifications_rejected_total", labels: ["reason": code])
            throw StorekeeperError(.notificationRejected, "\(code): the notification names app \(found.map(String.init) ?? "none"), not \(expected)")
        }
        let app = verified.app

        // What the notification leads to: its signed transaction, granted to the owner of the
        // original transaction through the same path as a StoreKit 2 POST.
        var outcome = type == .test ? "test" : "no_transaction"
        var originalTransactionId: String?
        var submission: EvidenceSubmission?
        var events: EventBatch?
        if type == .rescindConsent {
            (outcome, events) = try await rescindedConsent(payload, app: app, uuid: uuid, now: now)
        }
        switch verified.transaction {
        case nil:
            break
        case .rejected(let code, _)?:
            outcome = code
        case .verified(let transaction, _, _, _)?:
            originalTransactionId = transaction.originalTransactionId ?? transaction.transactionId
            if type == .consumptionRequest {
                // Apple asks for consumption information before deciding a refund: recorded
                // for the developer's answer (Server API `sendConsumptionInformation`); nothing
                // about the purchase has changed yet.
                outcome = "consumption_requested"
            } else if let original = originalTransactionId,
                let owner = try await context.store.owner(appId: app.id, originalTransactionId: original)
            {
                outcome = "submitted"
                // The whole notification goes to the grant job: it verifies and applies the
                // nested transaction together with the renewal info (billing retry, grace).
                let hash = sha256Hex(Data(signedPayload.utf8))
                submission = EvidenceSubmission(
                    appId: app.id, appUserId: owner, evidenceHash: hash, evidence: .notification(signedPayload: signedPayload),
                    hints: ["notification": uuid])
            } else {
                // Nobody has claimed this purchase yet; their receipt or transaction will grant it.
                outcome = "unowned"
            }
        }
        let record = NotificationRecord(
            appId: app.id, notificationUUID: uuid, notificationType: type.rawValue, subtype: payload.subtype,
            signedDate: payload.signedDate?.date, originalTransactionId: originalTransactionId,
            environment: payload.environment?.storageName, payload: signedPayload, outcome: outcome)
        return try await store(record, submission: submission, events: events, version: "2", now: now)
    }

    /// RESCIND_CONSENT names no purchase, only the customer's signed app transaction: verified
    /// for this app, its `appTransactionId` finds the app users holding that Apple account's
    /// purchases, and each is told (`consent_rescinded`, id from the notification and the user,
    /// so a second delivery adds nothing). Nothing they own changes.
    private func rescindedConsent(
        _ payload: NotificationPayload, app: AppConfiguration, uuid: String, now: Date
    ) async throws -> (outcome: String, events: EventBatch?) {
        guard let signed = payload.appData?.signedAppTransactionInfo else { return ("no_app_transaction", nil) }
        let environment = payload.environment
        let verdict = try? await context.signedTransactionGate.verifier.verify(
            signed,
            expecting: .init(
                bundleId: app.bundleId, appAppleId: environment == .production ? app.appAppleId : nil, environment: environment?.rawValue),
            time: context.signedTransactionGate.validationTime(now: now))
        guard let verdict else { return ("app_transaction_unreadable", nil) }
        if let first = verdict.failures.first { return (first.code, nil) }
        guard let appTransaction = try? JSONDecoder().decode(SignedAppTransaction.self, from: Data(verdict.payload)),
            let appTransactionId = appTransaction.appTransactionId, !appTransactionId.isEmpty
        else { return ("no_app_transaction_id", nil) }
        var users: [String] = []
        for tx in try await context.store.transactions(appId: app.id, appTransactionId: appTransactionId) where !users.contains(tx.appUserId) {
            users.append(tx.appUserId)
        }
        guard !users.isEmpty else { return ("consent_rescinded_unknown_customer", nil) }
        let events = users.map { user in
            SubscriberEvent(
                id: SubscriberEvent.id(type: .consentRescinded, subject: user, cause: uuid), type: .consentRescinded, appId: app.id,
                environment: environment?.storageName, appUserId: user, occurredAt: payload.signedDate?.date ?? now, recordedAt: now,
                source: .notification, details: .init(appTransactionId: appTransactionId))
        }
        return ("consent_rescinded", EventBatch(events: events, now: now))
    }
}
