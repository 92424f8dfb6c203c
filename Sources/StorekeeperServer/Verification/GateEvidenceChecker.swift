import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain

/// `RecheckSignedEvidence`'s port: the process's `SignedTransactionGate`, the stored evidence's
/// claims checked against the app as configured now (its signatures were verified at acceptance).
struct GateEvidenceChecker: SignedEvidenceChecking {
    let gate: SignedTransactionGate
    let app: AppConfiguration

    func check(_ jws: String, now: Date) async -> SignedEvidenceCheck {
        do {
            switch try await gate.check(jws, app: app, now: now, signatures: .verifiedAtAcceptance) {
            case .rejected(let reason, _):
                return .rejected(reason)
            case .verified(let transaction, let evidence, let environment, let notification):
                // Refunds and their reversals are ordered by when Apple signed what says so.
                return .verified(
                    evidence, environment: environment, signedAt: notification?.signedDate?.date ?? transaction.signedDate?.date,
                    reversesRefunds: notification?.notificationType == .refundReversed)
            }
        } catch {
            return .rejected(.invalidSignedTransaction)
        }
    }
}
