public import Foundation
public import Persistence
public import StorekeeperDomain

/// Spending the credits consumable purchases added, and the history of it: each spend checked
/// against the balance in the transaction that stores it, once per idempotency key, with its
/// `credits_spent` event (and so its webhooks) in the same transaction.
public struct ManageCredits: Sendable {
    public typealias Store = CreditStore & LedgerStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public struct SpendRequest: Sendable {
        public var appId: String
        public var appUserId: String
        /// The caller's `Idempotency-Key`.
        public var key: String?
        public var amount: Int?
        public var reason: String?

        public init(appId: String, appUserId: String, key: String?, amount: Int?, reason: String?) {
            self.appId = appId
            self.appUserId = appUserId
            self.key = key
            self.amount = amount
            self.reason = reason
        }
    }

    public enum SpendOutcome: Sendable, Hashable {
        /// `replayed`: stored before under the same key for the same request; nothing spent now.
        case spent(CreditSpend, replayed: Bool)
        case invalid([String])
        /// The balance is below the amount (maybe below zero); nothing spent.
        case insufficient(balance: Int)
        /// The key names a spend of another user, amount or reason.
        case keyReused(CreditSpend)
    }

    public func spend(_ request: SpendRequest, now: Date) async throws -> SpendOutcome {
        let problems = CreditSpend.problems(key: request.key, amount: request.amount, reason: request.reason)
        guard problems.isEmpty, let key = request.key, let amount = request.amount, let reason = request.reason else {
            return .invalid(problems)
        }
        let (appId, appUserId) = (request.appId, request.appUserId)
        let result = try await store.spendCredits(appId: appId, appUserId: appUserId, spendId: key, now: now) { balance in
            guard case .spend(let after) = CreditSpendRule.decide(balance: balance, amount: amount) else { return nil }
            let spend = CreditSpend(
                id: key, appId: appId, appUserId: appUserId, amount: amount, reason: reason, spentAt: now, balanceAfter: after)
            return (spend, EventBatch(events: [spend.event(now: now)]))
        }
        switch result {
        case .spent(let spend): return .spent(spend, replayed: false)
        case .refused(let balance): return .insufficient(balance: balance)
        case .existing(let stored):
            return stored.isSameRequest(appUserId: appUserId, amount: amount, reason: reason) ? .spent(stored, replayed: true) : .keyReused(stored)
        }
    }

    /// A user's balance as it stands, what built it and what they spent, newest spend first.
    public struct History: Sendable, Hashable {
        public var balance: Int
        public var purchased: Int
        public var spent: Int
        public var spends: [RecordedCreditSpend]
    }

    public func history(appId: String, appUserId: String, before: Int64?, limit: Int) async throws -> History {
        let spends = try await store.creditSpends(appId: appId, appUserId: appUserId, before: before, limit: limit)
        let spent = try await store.creditsSpent(appId: appId, appUserId: appUserId)
        let purchased = try await store.transactions(appId: appId, appUserId: appUserId).filter { !$0.isRevoked }.reduce(0) { $0 + $1.credits }
        return History(balance: purchased - spent, purchased: purchased, spent: spent, spends: spends)
    }
}
