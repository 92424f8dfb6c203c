import AppStoreCrypto
import AppStoreModels
import Foundation
import Hummingbird
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// App Store Server Notifications V2 for every configured app and both environments, on one
/// URL, and the operator's pull of what Apple could not deliver (`NotificationGapFill`). Apple authenticates by signing: the signed payload is verified before anything is
/// stored, and the answer is 200 only after the notification is durably stored (with the grant
/// job its signed transaction causes, in the same transaction). A second delivery of the same
/// notification (Apple retries) changes nothing.
struct NotificationController {
    let context: ServerContext

    func register(on router: RouteTable) {
        router.group("v1").post("notifications/appstore") { request, _ in try await receive(request) }
        router.admin("v1/admin").post("apps/:app/notifications/gap-fill") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await gapFill(request, app: app)
        }
    }

    /// Pulls Apple's notification history now (`?lookbackSeconds=`, default the policy's) and
    /// answers what it found; the scheduled gap-fill does the same every interval.
    private func gapFill(_ request: Request, app: AppConfiguration) async throws -> Response {
        guard context.serverAPIClients[app.id] != nil else {
            throw StorekeeperError(.serverAPINotConfigured, "app '\(app.id)' has no serverAPI key")
        }
        let policy = context.configuration.notificationGapFill
        let seconds = try QueryInput(request).seconds("lookbackSeconds", maximum: 180 * 86_400, excludingZero: true) ?? policy.lookbackSeconds
        let now = context.now()
        let report = try await NotificationGapFill(context: context, policy: policy).fill(
            app, from: now.addingTimeInterval(-seconds), to: now, cause: "operator")
        return try StorekeeperJSON.response(report)
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

/// The edge of notification ingest: verifies what arrived (V2 signatures, the V1 shared secret),
/// hands the verified facts to `IngestNotification` and maps its result to the answer and the
/// metrics.
struct NotificationIngest {
    let context: ServerContext

    struct Answer: Encodable {
        var notificationUUID: String
        var notificationType: String
        var duplicate: Bool
        var outcome: NotificationOutcome
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
            context.metrics.increment(Metric.notificationsRejectedTotal, labels: ["reason": "v1_password_mismatch"])
            throw StorekeeperError(.notificationRejected, "v1_password_mismatch: the password is not this app's shared secret")
        }
        let digest = sha256Hex(raw)
        let purchase: IngestNotification.Purchase =
            notification.latestReceipt.map { .grant(.receipt(base64: $0), evidenceHash: "\(digest)-v1") } ?? .none(.noReceipt)
        return try await ingest(
            IngestNotification.Notification(
                appId: app.id, notificationUUID: "v1-\(digest.prefix(32))", notificationType: type, subtype: nil, signedDate: nil,
                originalTransactionId: notification.originalTransactionId, environment: notification.environment?.storageName,
                payload: String(decoding: raw, as: UTF8.self), version: .v1, purchase: purchase))
    }

    /// One transaction (`IngestNotification`): the notification once per UUID and what it
    /// causes; then the answer.
    private func ingest(_ notification: IngestNotification.Notification) async throws -> Answer {
        answer(notification, try await context.useCases.ingestNotification(notification, now: context.now()))
    }

    /// The answer to Apple, and the notification counted by type, version and outcome.
    private func answer(_ notification: IngestNotification.Notification, _ result: IngestNotification.Result) -> Answer {
        context.metrics.increment(
            Metric.notificationsTotal,
            labels: [
                "type": notification.notificationType, "version": notification.version.rawValue,
                "outcome": result.created ? result.outcome.rawValue : NotificationOutcome.duplicate.rawValue,
            ])
        return Answer(
            notificationUUID: notification.notificationUUID, notificationType: notification.notificationType, duplicate: !result.created,
            outcome: result.outcome, verificationId: result.verificationId)
    }

    func ingest(signedPayload: String) async throws -> Answer {
        let (notification, result) = try await context.useCases.receiveNotification(
            signedPayload, verifier: NotificationVerifier(gate: context.signedTransactionGate, apps: context.apps, metrics: context.metrics),
            now: context.now())
        return answer(notification, result)
    }
}

/// The gap-fill takes each notification of Apple's history through here, as if delivered.
extension NotificationIngest: NotificationReceiving {
    func receive(signedPayload: String) async throws -> Bool {
        try await ingest(signedPayload: signedPayload).duplicate
    }
}
