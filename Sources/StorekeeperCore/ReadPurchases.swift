import Foundation
public import Persistence
public import StorekeeperDomain

/// What was bought and paid, as support and finance read it: the ledger, and the holders of one
/// customer's Apple account (a purchase moved between app users shows up here).
public struct ReadPurchases: Sendable {
    public typealias Store = LedgerStore & NotificationStore
    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// What Apple's notifications said about a customer's purchases (their original
    /// transactions), newest first, at most `limit`: support sees a renewal, a refund or a
    /// billing problem as Apple told it, and what the server did with it.
    public func notifications(appId: String, appUserId: String, limit: Int) async throws -> [NotificationRecord] {
        let originals = Set(try await store.transactions(appId: appId, appUserId: appUserId).map(\.originalTransactionId))
        guard !originals.isEmpty else { return [] }
        return try await store.notifications(appId: appId, originalTransactionIds: originals.sorted(), limit: limit)
    }

    public func ledger(_ query: LedgerQuery) async throws -> [LedgerEntry] {
        try await store.ledger(query)
    }

    /// One Apple account's transactions in this app (oldest first) and the app users holding
    /// them, in the order they first appear.
    public struct AccountHolders: Sendable {
        public var appUserIds: [String]
        public var transactions: [TransactionRecord]
    }

    /// Nil when no stored transaction carries `appTransactionId`.
    public func holders(appId: String, appTransactionId: String) async throws -> AccountHolders? {
        let transactions = try await store.transactions(appId: appId, appTransactionId: appTransactionId)
        guard !transactions.isEmpty else { return nil }
        var users: [String] = []
        for tx in transactions where !users.contains(tx.appUserId) { users.append(tx.appUserId) }
        return AccountHolders(appUserIds: users, transactions: transactions)
    }
}
