public import Foundation

/// What to answer a refund request, from the app's policy and what Storekeeper knows: pure, at
/// an instant (docs/REFUNDS.md).
public enum RefundAnswerRule {
    /// What is known of the purchase and its holder.
    public struct Facts: Sendable, Hashable {
        /// The transaction as granted; nil when it was never granted to anyone.
        public var transaction: TransactionRecord?
        /// The holder's credit balance (consumables not refunded, less spends).
        public var creditBalance: Int
        /// Credits of the holder's other purchases whose refund requests came before this one and
        /// may still end in a refund: that part of the balance is theirs, not this purchase's, so
        /// two requests at once never count the same remaining credits twice.
        public var claimedByEarlierRequests: Int

        public init(transaction: TransactionRecord?, creditBalance: Int, claimedByEarlierRequests: Int = 0) {
            self.transaction = transaction
            self.creditBalance = creditBalance
            self.claimedByEarlierRequests = claimedByEarlierRequests
        }
    }

    public enum Decision: Sendable, Hashable {
        /// Send this, for this reason (the rule that set the preference, or the mode).
        case send(ConsumptionAnswer, note: String)
        case skip(note: String)
        case expired
    }

    public static func decide(_ policy: RefundPolicy, request: RefundRequest, facts: Facts, now: Date) -> Decision {
        guard now < request.deadline else { return .expired }
        guard policy.mode != .off else { return .skip(note: "policy_off") }
        guard policy.customersConsented else { return .skip(note: "no_consent") }
        let consumed = consumptionPercentage(facts, now: now)
        let preference: (String?, String)
        switch policy.mode {
        case .off, .dataOnly: preference = (nil, "data_only")
        case .preferGrant: preference = ("GRANT_FULL", "prefer_grant")
        case .preferDecline: preference = ("DECLINE", "prefer_decline")
        case .rules: preference = ruled(policy, facts: facts, consumed: consumed, now: now)
        }
        let answer = ConsumptionAnswer(
            customerConsented: true, deliveryStatus: facts.transaction == nil ? "UNDELIVERED_OTHER" : "DELIVERED",
            sampleContentProvided: policy.sampleContentProvided, consumptionPercentage: consumed, refundPreference: preference.0)
        return .send(answer, note: preference.1)
    }

    /// The first rule that matches, in the order documented: spent credits, recent purchase, storefront.
    static func ruled(_ policy: RefundPolicy, facts: Facts, consumed: Int?, now: Date) -> (String?, String) {
        guard let transaction = facts.transaction else { return (nil, "no_rule") }
        if policy.declineWhenCreditsSpent, transaction.productType == .consumable, let consumed, consumed > 0 {
            return ("DECLINE", "credits_spent")
        }
        if let hours = policy.grantWithinHours, now.timeIntervalSince(transaction.purchaseDate) <= Double(hours) * 3_600 {
            return ("GRANT_FULL", "within_\(hours)_hours")
        }
        if let storefront = transaction.storefront, policy.grantStorefronts.contains(storefront) {
            return ("GRANT_FULL", "storefront_\(storefront)")
        }
        return (nil, "no_rule")
    }

    /// How much of the purchase was used, in milliunits of a percent. A consumable: the share of
    /// its credits spent, counting the holder's remaining balance as this purchase's first (the
    /// reading kindest to the customer), less what earlier open requests already claim of it. A subscription or pass: the share of its period gone.
    /// Anything else, or a purchase never granted: unknown (nil).
    public static func consumptionPercentage(_ facts: Facts, now: Date) -> Int? {
        guard let transaction = facts.transaction else { return nil }
        switch transaction.productType {
        case .consumable:
            let credits = transaction.isRevoked ? 0 : transaction.credits
            guard credits > 0 else { return nil }
            let unspent = min(credits, max(0, facts.creditBalance - max(0, facts.claimedByEarlierRequests)))
            return Int((Int64(credits - unspent) * 100_000) / Int64(credits))
        case .autoRenewable, .nonRenewing:
            guard let end = transaction.expiresDate, end > transaction.purchaseDate else { return nil }
            let total = end.timeIntervalSince(transaction.purchaseDate)
            let used = min(max(now.timeIntervalSince(transaction.purchaseDate), 0), total)
            return Int((used / total * 100_000).rounded(.down))
        default:
            return nil
        }
    }
}
