public import Foundation
public import Persistence
public import StorekeeperDomain

/// Whether a user may take an offer, from their own history as stored (Apple's signed
/// transactions), by the rules of `OfferEligibility`; and which of their transactions a V2 JWS
/// names. The routes sign only what this admits.
public struct DecideOffers: Sendable {
    public typealias Store = LedgerStore & CatalogStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public struct Answer: Sendable, Hashable {
        public var decision: OfferEligibility.Decision
        /// Any transaction of the user (the latest bought), for the JWS; nil when none is stored.
        public var customerTransactionId: String?
    }

    /// A promotional offer the app configured: by its audience, within its product's group.
    public func promotional(
        appId: String, appUserId: String, offer: OfferDefinition, groups: [String: [String]], now: Date
    ) async throws -> Answer {
        let transactions = try await store.transactions(appId: appId, appUserId: appUserId)
        let group = OfferEligibility.group(of: offer.productId, groups: groups, catalog: try await store.products(appId: appId))
        return Answer(
            decision: OfferEligibility.promotional(offer, group: group, transactions: transactions, now: now),
            customerTransactionId: OfferEligibility.customerTransactionId(transactions))
    }

    /// The win-back offers Apple names for the user's lapsed subscriptions (`OfferEligibility.winBack`).
    public func winBack(
        appId: String, appUserId: String, offers: [OfferDefinition], groups: [String: [String]], now: Date
    ) async throws -> [OfferEligibility.WinBack] {
        OfferEligibility.winBack(
            subscriptions: try await store.subscriptions(appId: appId, appUserId: appUserId), offers: offers, groups: groups,
            catalog: try await store.products(appId: appId), now: now)
    }

    /// The introductory offer of an auto-renewable product of the catalog; nil when the catalog
    /// has no such product.
    ///
    /// Apple grants an introductory offer once per Apple account and subscription group, not per
    /// app account: the history judged is the user's, and every transaction of the Apple accounts
    /// their purchases were made with (Apple's signed `appTransactionId`), whichever app user
    /// holds it. A user with no stored purchase has no known Apple account and is judged alone.
    public func introductory(appId: String, appUserId: String, productId: String, groups: [String: [String]]) async throws -> Answer? {
        let catalog = try await store.products(appId: appId)
        guard catalog.contains(where: { $0.productId == productId && $0.type == .autoRenewable }) else { return nil }
        let own = try await store.transactions(appId: appId, appUserId: appUserId)
        var history = own
        for account in Set(own.compactMap(\.appTransactionId)).sorted() {
            history += try await store.transactions(appId: appId, appTransactionId: account)
        }
        let group = OfferEligibility.group(of: productId, groups: groups, catalog: catalog)
        return Answer(
            decision: OfferEligibility.introductory(group: group, transactions: history),
            customerTransactionId: OfferEligibility.customerTransactionId(own))
    }
}
