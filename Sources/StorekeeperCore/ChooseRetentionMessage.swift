public import Foundation
public import Persistence
public import StorekeeperDomain

/// What Apple's Retention Messaging is answered with for one subscription: the facts the app's
/// choices depend on (renewals, billing retry) read from storage, then the first choice that
/// applies (`RetentionRule`). Reads only: Apple waits for the answer while the customer looks.
public struct ChooseRetentionMessage: Sendable {
    public typealias Store = NotificationStore & LedgerStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public func callAsFunction(
        appId: String, originalTransactionId: String, productId: String, locale: String, choices: [RetentionChoice], now: Date
    ) async throws -> RetentionChoice? {
        var facts = RetentionFacts(productId: productId, locale: locale, renewals: nil, inBillingRetry: false)
        // A subscription nobody claimed yet has no stored history: only choices that ask nothing of it apply.
        if let owner = try await store.owner(appId: appId, originalTransactionId: originalTransactionId) {
            let periods = try await store.transactions(appId: appId, appUserId: owner).filter {
                $0.originalTransactionId == originalTransactionId && $0.productType == .autoRenewable
            }
            facts.renewals = periods.isEmpty ? nil : periods.count - 1
            if let subscription = try await store.subscriptions(appId: appId, appUserId: owner).first(where: {
                $0.originalTransactionId == originalTransactionId
            }) {
                facts.inBillingRetry = SubscriptionStatus.evaluate(subscription, at: now) == .inBillingRetry
            }
        }
        return RetentionRule.choose(choices, facts: facts)
    }
}
