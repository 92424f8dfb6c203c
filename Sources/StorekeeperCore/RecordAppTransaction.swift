public import AppStoreModels
public import Foundation
public import Persistence
public import StorekeeperDomain

/// StoreKit's `AppTransaction.shared` verified for one app: Apple's signature and chain, the app's
/// bundle id (and Apple id in production), an environment the app accepts, and a payload that is
/// an app transaction. The server's adapter is its `SignedTransactionGate`; it throws for anything
/// else, and nothing is kept.
public protocol AppTransactionVerifying: Sendable {
    func verify(_ jws: String, now: Date) async throws -> (SignedAppTransaction, AppStoreEnvironment)
}

/// The app posts the device's app transaction, which is believed only once verified as Apple's
/// for this app: it is kept on the customer, the newest Apple signed winning, so the original app
/// version can grandfather customers who bought the app before it went free. It proves how the
/// app was obtained, not who the user is, so it grants nothing by itself.
public struct RecordAppTransaction: Sendable {
    let store: any AppTransactionStore

    public init(store: any AppTransactionStore) {
        self.store = store
    }

    /// What is stored for the customer afterwards (an older copy than the stored one changes nothing).
    public func callAsFunction(
        appId: String, appUserId: String, signed jws: String, verifier: any AppTransactionVerifying, now: Date
    ) async throws -> CustomerAppTransaction {
        let (payload, environment) = try await verifier.verify(jws, now: now)
        let record = CustomerAppTransaction(
            appTransactionId: payload.appTransactionId ?? "", environment: environment.rawValue,
            originalAppVersion: payload.originalApplicationVersion, originalPurchaseDate: payload.originalPurchaseDate?.date,
            originalPlatform: payload.originalPlatform, signedDate: payload.signedAt ?? now, receivedAt: now)
        return try await store.recordAppTransaction(appId: appId, appUserId: appUserId, record)
    }
}
