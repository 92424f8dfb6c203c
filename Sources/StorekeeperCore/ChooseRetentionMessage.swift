public import Foundation
public import Persistence
public import StorekeeperDomain

/// What Apple's Retention Messaging is answered with for one subscription: the facts the app's
/// choices depend on (renewals, billing retry, the offers its owner may take) read from storage,
/// then the first choice that applies (`RetentionRule`). Reads only: Apple waits for the answer
/// while the customer looks.
public struct ChooseRetentionMessage: Sendable {
    public typealias Store = NotificationStore & LedgerStore & CatalogStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public func callAsFunction(
        appId: String, originalTransactionId: String, productId: String, locale: String, choices: [RetentionChoice],
        offers: [OfferDefinition], groups: [String: [String]], now: Date
    ) async throws -> RetentionChoice? {
        var facts = RetentionFacts(productId: productId, locale: locale, renewals: nil, inBillingRetry: false)
        // A subscription nobody claimed yet has no stored history: only choices that ask nothing
        // of it apply, and no offer (nobody is known to be in its audience).
        if let owner = try await store.owner(appId: appId, originalTransactionId: originalTransactionId) {
            let transactions = try await store.transactions(appId: appId, appUserId: owner)
            let periods = transactions.filter { $0.originalTransactionId == originalTransactionId && $0.productType == .autoRenewable }
            facts.renewals = periods.isEmpty ? nil : periods.count - 1
            if let subscription = try await store.subscriptions(appId: appId, appUserId: owner).first(where: {
                $0.originalTransactionId == originalTransactionId
            }) {
                facts.inBillingRetry = SubscriptionStatus.evaluate(subscription, at: now) == .inBillingRetry
            }
            let wanted = Set(choices.compactMap(\.offerId))
            let catalog = try await store.products(appId: appId)
            for offer in offers where offer.kind == .promotional && wanted.contains(offer.id) {
                let group = OfferEligibility.group(of: offer.productId, groups: groups, catalog: catalog)
                if OfferEligibility.promotional(offer, group: group, transactions: transactions, now: now).eligible {
                    facts.eligibleOfferIds.insert(offer.id)
                }
            }
        }
        return RetentionRule.choose(choices, facts: facts)
    }
}
