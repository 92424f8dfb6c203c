import Foundation
public import Persistence
public import StorekeeperDomain

/// The app posts the device's app transaction (StoreKit's `AppTransaction.shared`), which the
/// edge has verified as Apple's: it is kept on the customer, the newest Apple signed winning, so
/// the original app version can grandfather customers who bought the app before it went free.
public struct RecordAppTransaction: Sendable {
    let store: any AppTransactionStore

    public init(store: any AppTransactionStore) {
        self.store = store
    }

    /// What is stored for the customer afterwards (an older copy than the stored one changes nothing).
    public func callAsFunction(appId: String, appUserId: String, _ record: CustomerAppTransaction) async throws -> CustomerAppTransaction {
        try await store.recordAppTransaction(appId: appId, appUserId: appUserId, record)
    }
}
