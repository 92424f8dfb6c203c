import AppStoreCrypto
import AppStoreModels
import Foundation
import StorekeeperCore

/// `AcceptSignedTransaction`'s port: the process's `SignedTransactionGate`, every signature and
/// certificate checked now, for the app the request is for.
struct GateSignedTransactions: SignedTransactionVerifying {
    let gate: SignedTransactionGate
    let app: AppConfiguration

    func verify(_ jws: String, now: Date) async throws -> SignedTransactionVerdict {
        switch try await gate.check(jws, app: app, now: now) {
        case .rejected(let reason, let message): .rejected(reason, message: message)
        case .verified(let transaction, _, _, _): .verified(transaction, evidenceHash: sha256Hex(Data(jws.utf8)))
        }
    }
}

/// `RecordAppTransaction`'s port: the same gate, for the app the request is for.
struct GateAppTransactions: AppTransactionVerifying {
    let gate: SignedTransactionGate
    let app: AppConfiguration

    func verify(_ jws: String, now: Date) async throws -> (SignedAppTransaction, AppStoreEnvironment) {
        try await gate.appTransaction(jws, app: app, now: now)
    }
}
