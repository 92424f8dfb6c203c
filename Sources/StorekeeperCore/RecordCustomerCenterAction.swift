public import Foundation
public import Persistence
public import StorekeeperDomain

/// The app reports what its user did in its customer center (``CustomerCenterAction``): recorded
/// as the user's event, delivered like any other, once per the app's key.
public struct RecordCustomerCenterAction: Sendable {
    let store: any LedgerStore & WebhookStore

    public init(store: any LedgerStore & WebhookStore) {
        self.store = store
    }

    /// The event recorded (or recorded before under the same key); nil when the user has bought
    /// nothing (a customer center is for customers: an anonymous id made up for the purpose cannot
    /// fill the outbox) or the action names a transaction that is not theirs, which records
    /// nothing and tells nothing of whose it is.
    public func callAsFunction(appId: String, appUserId: String, _ action: CustomerCenterAction, now: Date) async throws -> SubscriberEvent? {
        let owned = try await store.transactions(appId: appId, appUserId: appUserId)
        guard !owned.isEmpty else { return nil }
        var transaction: TransactionRecord?
        if let id = action.transactionId {
            guard let named = owned.first(where: { $0.transactionId == id }) else { return nil }
            transaction = named
        }
        let event = action.event(appId: appId, appUserId: appUserId, transaction: transaction, now: now)
        try await store.recordEvents(EventBatch(events: [event]), now: now)
        return event
    }
}
