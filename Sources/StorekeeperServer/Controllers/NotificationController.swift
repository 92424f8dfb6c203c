import AppStoreCrypto
import AppStoreModels
import Crypto
import Foundation
import Hummingbird
import JobQueue
import Persistence
import StorekeeperDomain

/// App Store Server Notifications V2 for every configured app and both environments, on one
/// URL. Apple authenticates by signing: the signed payload is verified before anything is
/// stored, and the answer is 200 only after the notification is durably stored (with the grant
/// job its signed transaction causes, in the same transaction). A second delivery of the same
/// notification (Apple retries) changes nothing.
struct NotificationController {
    let context: ServerContext

    func register(on router: Router<BasicRequestContext>) {
        router.group("v1").post("notifications/appstore") { request, _ in try await receive(request) }
    }

    struct Body: Decodable {
        var signedPayload: String
    }

    struct Answer: Encodable {
        var notificationUUID: String
        var notificationType: String
        var duplicate: Bool
        var outcome: String
        var verificationId: String?
    }

    func receive(_ request: Request) async throws -> Response {
        let body = try StorekeeperJSON.decode(Body.self, from: try await context.body(request))
        let now = context.now()
        let verdict: SignedDataVerdict
        do {
            verdict = try await context.signedTransactionGate.verifier.verify(
                body.signedPayload, expecting: .init(), time: .signedDate(fallback: now))
        } catch let error as SignedDataError {
            throw StorekeeperError(.invalidNotification, "not a signed notification (\(error.code)): \(error.message)")
        }
        if let first = verdict.failures.first {
            context.metrics.increment("storekeeper_notifications_rejected_total", labels: ["reason": first.code])
            throw StorekeeperError(.notificationRejected, "\(first.code): \(verdict.failures.map(\.description).joined(separator: "; "))")
        }
        guard let payload = try? JSONDecoder().decode(NotificationPayload.self, from: Data(verdict.payload)),
            let type = payload.notificationType, let uuid = payload.notificationUUID
        else { throw StorekeeperError(.invalidNotification, "the signed payload is not a V2 notification") }
        guard let app = context.apps.first(where: { $0.bundleId == payload.bundleId }) else {
            throw StorekeeperError(.unknownApp, "no configured app has bundle id '\(payload.bundleId ?? "(none)")'")
        }

        // What the notification leads to: its signed transaction, granted to the owner of the
        // original transaction through the same path as a StoreKit 2 POST.
        var outcome = "no_transaction"
        var originalTransactionId: String?
        var submission: ReceiptSubmission?
        if let signed = payload.data?.signedTransactionInfo {
            switch try await context.signedTransactionGate.check(signed, app: app, now: now) {
            case .rejected(let code, _):
                outcome = code
            case .verified(let transaction, _, _):
                originalTransactionId = transaction.originalTransactionId ?? transaction.transactionId
                if let original = originalTransactionId,
                    let owner = try await context.store.owner(appId: app.id, originalTransactionId: original)
                {
                    outcome = "submitted"
                    // The whole notification goes to the grant job: it verifies and applies the
                    // nested transaction together with the renewal info (billing retry, grace).
                    let hash = SHA256.hash(data: Data(body.signedPayload.utf8)).map { String(format: "%02x", $0) }.joined()
                    submission = ReceiptSubmission(
                        appId: app.id, appUserId: owner, receiptHash: hash, receiptBase64: body.signedPayload, refresh: false,
                        hints: ["notification": uuid], jobKind: verifySignedTransactionJobKind)
                } else {
                    // Nobody has claimed this purchase yet; their receipt or transaction will grant it.
                    outcome = "unowned"
                }
            }
        }
        let record = NotificationRecord(
            appId: app.id, notificationUUID: uuid, notificationType: type.rawValue, subtype: payload.subtype,
            signedDate: payload.signedDate?.date, originalTransactionId: originalTransactionId,
            environment: payload.environment?.storageName, payload: body.signedPayload, outcome: outcome)
        let result = try await context.store.recordNotification(record, submission: submission, now: now)
        if result.verification != nil { context.signal.wake() }
        context.metrics.increment(
            "storekeeper_notifications_total", labels: ["type": type.rawValue, "outcome": result.created ? outcome : "duplicate"])
        return try StorekeeperJSON.response(
            Answer(
                notificationUUID: uuid, notificationType: type.rawValue, duplicate: !result.created, outcome: outcome,
                verificationId: result.verification?.id))
    }
}
