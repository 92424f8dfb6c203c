public import Foundation

/// Who may take an offer, decided from the user's own history as Apple signed it (docs/OFFERS.md).
/// Pure: the use case reads the history; the routes sign only what this admits.
public enum OfferEligibility {
    /// Whether the user may take the offer, and why not when they may not.
    public struct Decision: Sendable, Hashable {
        public var eligible: Bool
        /// A machine-readable reason: `new_to_group`, `subscribed_in_group` (introductory);
        /// `current_subscriber`, `lapsed_subscriber`, `never_subscribed`, `active_subscription`,
        /// `no_active_subscription` (promotional).
        public var reason: String

        public init(eligible: Bool, reason: String) {
            self.eligible = eligible
            self.reason = reason
        }
    }

    /// The auto-renewable products that share `productId`'s subscription group: the configured
    /// group naming it, or, for a product no group names, every auto-renewable no group names
    /// (most apps have one group and configure none).
    public static func group(of productId: String, groups: [String: [String]], catalog: [Product]) -> Set<String> {
        if let named = groups.values.first(where: { $0.contains(productId) }) { return Set(named) }
        let grouped = Set(groups.values.flatMap { $0 })
        return Set(catalog.filter { $0.type == .autoRenewable && !grouped.contains($0.productId) }.map(\.productId)).union([productId])
    }

    /// An introductory offer (a free trial, pay as you go, pay up front) is for a customer new
    /// to the subscription group: any transaction of theirs in the group, refunded or shared by
    /// family included, was a subscription in it, and Apple gives the offer once per group.
    public static func introductory(group: Set<String>, transactions: [TransactionRecord]) -> Decision {
        transactions.contains { group.contains($0.productId) }
            ? Decision(eligible: false, reason: "subscribed_in_group") : Decision(eligible: true, reason: "new_to_group")
    }

    /// A promotional offer by its audience: whether the user has a subscription in the group
    /// active at `now` (not refunded, not expired), and whether they ever had one.
    public static func promotional(
        _ offer: OfferDefinition, group: Set<String>, transactions: [TransactionRecord], now: Date
    ) -> Decision {
        let inGroup = transactions.filter { group.contains($0.productId) }
        let active = inGroup.contains { !$0.isRevoked && ($0.expiresDate.map { $0 > now } ?? false) }
        switch offer.audience {
        case .currentOrLapsed:
            guard !inGroup.isEmpty else { return Decision(eligible: false, reason: "never_subscribed") }
            return Decision(eligible: true, reason: active ? "current_subscriber" : "lapsed_subscriber")
        case .current:
            return active
                ? Decision(eligible: true, reason: "current_subscriber") : Decision(eligible: false, reason: "no_active_subscription")
        case .lapsed:
            if active { return Decision(eligible: false, reason: "active_subscription") }
            return inGroup.isEmpty
                ? Decision(eligible: false, reason: "never_subscribed") : Decision(eligible: true, reason: "lapsed_subscriber")
        }
    }

    /// A win-back offer Apple would sell the user, as its renewal info names it.
    public struct WinBack: Sendable, Hashable {
        public var offerId: String
        /// The configured offer's product; else the lapsed subscription's.
        public var productId: String
        /// The lapsed subscription whose renewal info names the offer.
        public var originalTransactionId: String
        /// Whether the app configured the offer (`apps[].offers`, kind `win_back`).
        public var configured: Bool

        public init(offerId: String, productId: String, originalTransactionId: String, configured: Bool) {
            self.offerId = offerId
            self.productId = productId
            self.originalTransactionId = originalTransactionId
            self.configured = configured
        }
    }

    /// Win-back offers are Apple's to grant: it names them in a lapsed subscription's renewal
    /// info (`eligibleWinBackOfferIds`). The server relays that list, for subscriptions that
    /// have lapsed (expired at `now`, not refunded) in a group where the user has nothing
    /// active now (a user who came back is not won back again). Each offer once, in Apple's order.
    public static func winBack(
        subscriptions: [SubscriptionFacts], offers: [OfferDefinition], groups: [String: [String]], catalog: [Product], now: Date
    ) -> [WinBack] {
        func active(_ facts: SubscriptionFacts) -> Bool { facts.revokedAt == nil && (facts.expiresDate.map { $0 > now } ?? false) }
        var found: [WinBack] = []
        for facts in subscriptions.sorted(by: { $0.originalTransactionId < $1.originalTransactionId }) {
            guard let ids = facts.winBackOfferIds, !ids.isEmpty, facts.revokedAt == nil, !active(facts) else { continue }
            let group = Self.group(of: facts.productId, groups: groups, catalog: catalog)
            guard !subscriptions.contains(where: { group.contains($0.productId) && active($0) }) else { continue }
            for id in ids where !found.contains(where: { $0.offerId == id }) {
                let offer = offers.first { $0.kind == .winBack && $0.id == id }
                found.append(
                    WinBack(
                        offerId: id, productId: offer?.productId ?? facts.productId, originalTransactionId: facts.originalTransactionId,
                        configured: offer != nil))
            }
        }
        return found
    }

    /// The customer's transaction a V2 JWS names (Apple: any transaction of the customer): the
    /// one bought last, or the app transaction's id when nothing was bought.
    public static func customerTransactionId(_ transactions: [TransactionRecord]) -> String? {
        if let latest = transactions.max(by: { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }) {
            return latest.transactionId
        }
        return transactions.lazy.compactMap(\.appTransactionId).first
    }
}
