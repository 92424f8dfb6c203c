import AppStoreCrypto
import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Apple's V2 notification, verified for the app it names before anything in it is believed:
/// the payload's signature and chain, the app by bundle id, the nested renewal info and signed
/// transaction verified for it (`SignedTransactionGate.notification`, the one notification
/// verifier the grant job uses too), and a rescinded consent's signed app transaction: the
/// `NotificationVerifying` port of `ReceiveNotification`. What leaves here are facts; a refusal
/// is counted by its reason and answered.
struct NotificationVerifier: NotificationVerifying {
    let gate: SignedTransactionGate
    let apps: [AppConfiguration]
    let metrics: MetricsRegistry

    func verify(_ signedPayload: String, now: Date) async throws -> VerifiedNotification {
        let verdict: SignedDataVerdict
        do {
            verdict = try await gate.verifier.verify(signedPayload, expecting: .init(), time: gate.validationTime(now: now))
        } catch let error as SignedDataError {
            throw StorekeeperError(.invalidNotification, "not a signed notification (\(error.code)): \(error.message)")
        }
        if let first = verdict.failures.first {
            metrics.increment(Metric.notificationsRejectedTotal, labels: ["reason": first.code])
            throw StorekeeperError(.notificationRejected, "\(first.code): \(verdict.failures.map(\.description).joined(separator: "; "))")
        }
        guard let payload = SignedTransactionGate.notificationPayload(verdict), let type = payload.notificationType,
            let uuid = payload.notificationUUID
        else { throw StorekeeperError(.invalidNotification, "the signed payload is not a V2 notification") }
        let verified: SignedTransactionGate.VerifiedNotification
        switch await gate.notification(payload, apps: apps, now: now) {
        case .verified(let notification): verified = notification
        case .unknownApp(let bundleId):
            throw StorekeeperError(.unknownApp, "no configured app has bundle id '\(bundleId ?? "(none)")'")
        case .refused(let refusal):
            metrics.increment(Metric.notificationsRejectedTotal, labels: ["reason": refusal.reason.rawValue])
            throw StorekeeperError(.notificationRejected, "\(refusal.reason.rawValue): \(refusal.message)")
        }
        let transaction: IngestNotification.TransactionFact? =
            switch verified.transaction {
            case nil: nil
            case .rejected(let reason, _)?: .rejected(reason)
            case .verified(let transaction, _, _, _)?:
                .verified(transactionId: transaction.transactionId, originalTransactionId: transaction.originalTransactionId)
            }
        let app = verified.app
        return VerifiedNotification(
            appId: app.id, refundPolicy: app.refundRequests, consentPolicy: app.rescindConsentPolicy, type: type, uuid: uuid,
            payload: payload, evidenceHash: sha256Hex(Data(signedPayload.utf8)), transaction: transaction,
            consent: type == .rescindConsent ? await rescindedConsent(payload, app: app, now: now) : nil)
    }

    /// RESCIND_CONSENT's signed app transaction, verified for this app: the customer's
    /// `appTransactionId`, or why there is none.
    private func rescindedConsent(_ payload: NotificationPayload, app: AppConfiguration, now: Date) async -> IngestNotification.Consent {
        guard let signed = payload.appData?.signedAppTransactionInfo else { return .unverified(.noAppTransaction) }
        let verdict: SignedDataVerdict
        switch await gate.trusted(signed, kind: .appTransaction, app: app, expectedEnvironment: payload.environment, now: now) {
        case .success(let trusted): verdict = trusted
        case .failure(let refusal) where refusal.reason == .invalidSignedTransaction: return .unverified(.appTransactionUnreadable)
        case .failure(let refusal): return .unverified(.rejected(refusal.reason))
        }
        guard let appTransaction = try? JSONDecoder().decode(SignedAppTransaction.self, from: Data(verdict.payload)),
            let appTransactionId = appTransaction.appTransactionId, !appTransactionId.isEmpty
        else { return .unverified(.noAppTransactionId) }
        return .appTransaction(id: appTransactionId, occurredAt: payload.signedDate?.date ?? now)
    }
}
