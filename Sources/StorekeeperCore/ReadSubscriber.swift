public import Foundation
public import Persistence
public import StorekeeperDomain

/// What one app user owns now, as `GET /v1/subscribers/{id}` answers it: their transactions and
/// subscription facts with the app's catalog and any provisional access still running, built by
/// the domain's `SubscriberView`. Written once, so the API and whatever later reads a customer
/// (entitlements, the console) agree.
public struct ReadSubscriber: Sendable {
    public typealias Store = LedgerStore & CatalogStore & VerificationStore & PromotionalGrantStore & EventStore & CustomerStore & IdentityStore
        & CreditStore & AppTransactionStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public func callAsFunction(appId: String, appUserId: String, now: Date) async throws -> SubscriberView {
        let transactions = try await store.transactions(appId: appId, appUserId: appUserId)
        let subscriptions = try await store.subscriptions(appId: appId, appUserId: appUserId)
        let catalog = Dictionary(try await store.products(appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
        let provisional = try await store.provisionalGrants(appId: appId, appUserId: appUserId, now: now)
        let entitlements = try await store.entitlementDefinitions(appId: appId)
        let promotional = try await store.promotionalGrants(appId: appId, appUserId: appUserId).filter { $0.revokedAt == nil }
        var view = SubscriberView.build(
            appUserId: appUserId, transactions: transactions, subscriptions: subscriptions, catalog: catalog, now: now,
            provisional: provisional, entitlements: entitlements, promotional: promotional)
        view.deductSpent(try await store.creditsSpent(appId: appId, appUserId: appUserId))
        EntitlementChanges.annotate(&view.entitlements, with: try await store.entitlementStates(appId: appId, appUserId: appUserId))
        view.attributes = try await store.attributes(appId: appId, appUserId: appUserId)
        view.apply(try await store.suspension(appId: appId, appUserId: appUserId))
        view.aliases = try await store.aliases(appId: appId, appUserId: appUserId)
        view.appTransaction = try await store.appTransaction(appId: appId, appUserId: appUserId)
        return view
    }
}
