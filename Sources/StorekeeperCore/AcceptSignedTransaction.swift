public import AppStoreModels
public import Foundation
public import Persistence
public import StorekeeperDomain

/// A StoreKit 2 signed transaction (or a V2 notification carrying one) verified for one app now:
/// Apple's signature and chain, then the app's claims. The server's adapter is its
/// `SignedTransactionGate`; it throws only for text that is not a JWS at all.
public protocol SignedTransactionVerifying: Sendable {
    func verify(_ jws: String, now: Date) async throws -> SignedTransactionVerdict
}

public enum SignedTransactionVerdict: Sendable {
    /// `evidenceHash`: the SHA-256 of the JWS as received (hex), its identity as evidence.
    case verified(SignedTransaction, evidenceHash: String)
    /// Readable, but not to be granted: the first failure's stable code, and every failure.
    case rejected(FailureReason, message: String)
}

/// What an app, its backend or an import posts as StoreKit 2 evidence becomes a submission only
/// once it is verified for the app, and only for a user `owned` lets have it (the app account
/// token's rule for a caller; an operator's import vouches for its rows). The submission claims
/// the transaction's original transaction, so the first live claim owns the purchase.
public struct AcceptSignedTransaction: Sendable {
    public enum Outcome: Sendable {
        case submission(EvidenceSubmission)
        case rejected(FailureReason, message: String)
    }

    public init() {}

    /// `owned` throws to refuse the transaction for this user; its error reaches the caller.
    public func callAsFunction(
        _ jws: String, appId: String, appUserId: String, verifier: any SignedTransactionVerifying, now: Date,
        owned: (SignedTransaction) throws -> Void
    ) async throws -> Outcome {
        switch try await verifier.verify(jws, now: now) {
        case .rejected(let reason, let message):
            return .rejected(reason, message: message)
        case .verified(let transaction, let evidenceHash):
            try owned(transaction)
            return .submission(
                EvidenceSubmission(
                    appId: appId, appUserId: appUserId, evidenceHash: evidenceHash, evidence: .signedTransaction(jws: jws),
                    claims: [transaction.originalTransactionId ?? transaction.transactionId].compactMap { $0 }))
        }
    }
}
