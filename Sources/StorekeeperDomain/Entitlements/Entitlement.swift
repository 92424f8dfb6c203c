public import Foundation

/// One entitlement of one subscriber at an instant: whether it is active, and the purchase
/// behind it (the one that wins by ``EntitlementRule``'s order).
public struct Entitlement: Codable, Hashable, Sendable {
    /// Where the access in the current period was bought.
    public enum PeriodType: String, Codable, Hashable, Sendable {
        /// Paid at the product's price, or a purchase that is not a subscription.
        case normal
        /// A free trial: an introductory offer whose discount is `FREE_TRIAL`.
        case trial
        /// A paid introductory offer (pay as you go, pay up front).
        case introductory
        /// Apple's promotional offers, offer codes and win-back offers (offer types 2, 3, 4,
        /// and any type Apple adds later).
        case promotional
    }

    /// How the subscriber holds the purchase: bought it, or shares a family member's.
    public enum Ownership: String, Codable, Hashable, Sendable {
        case purchased
        case familyShared = "family_shared"
    }

    /// Where the access comes from.
    public enum Source: String, Codable, Hashable, Sendable {
        case purchase
        /// An operator's promotional grant (`grantId`): no purchase, no money.
        case promotional
        /// A purchase brought in by an import of existing customers (docs/IMPORT.md); a
        /// renewal that arrives afterwards is a `purchase` again.
        case imported = "import"
    }

    public var id: String
    public var isActive: Bool
    /// When access ends (a subscription's expiry, a non-renewing period's end); nil for a
    /// lifetime purchase.
    public var expiresAt: Date?
    /// Apple will charge for another period when this one ends (auto-renew on, no billing
    /// issue); nil while Apple has not said (a signed transaction posted without renewal info).
    public var willRenew: Bool?
    public var periodType: PeriodType
    /// The purchase behind it; nil for a promotional grant.
    public var productId: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    public var purchaseDate: Date?
    public var environment: String?
    public var ownership: Ownership?
    /// A renewal failed and Apple is retrying (access kept only in a grace period).
    public var billingIssue: Bool
    /// While in a grace period: when it ends.
    public var gracePeriodExpiresAt: Date?
    /// The subscriber turned auto-renew off: access runs to `expiresAt`, then ends.
    public var unsubscribed: Bool
    public var source: Source
    /// The promotional grant behind it, when `source` is `promotional`.
    public var grantId: String? = nil
    /// When the current billing issue, and the current auto-renew off, were first seen: from the
    /// states recorded at the subscriber's changes (``EntitlementChanges``).
    public var billingIssueDetectedAt: Date? = nil
    public var unsubscribeDetectedAt: Date? = nil
    /// The plan the subscription behind it moves to at its next renewal, when the customer chose
    /// another (``SubscriberView/Subscription/pendingProductId``); access stays this plan's until then.
    public var pendingProductId: String? = nil
    /// A higher price announced for the subscription behind it
    /// (``SubscriberView/Subscription/priceIncreaseStatus``): `pending` means access lapses at
    /// `expiresAt` unless the customer agrees.
    public var priceIncreaseStatus: SubscriberView.PriceIncreaseStatus? = nil
}
