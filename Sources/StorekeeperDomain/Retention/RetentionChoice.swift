import Foundation

/// One answer an app gives Apple's Retention Messaging (the Get Retention Message endpoint, called
/// while a subscriber looks at cancelling), with when it applies. The app lists them in order;
/// the first that applies is answered (`RetentionRule`), none: Apple shows the app's default
/// message (docs/RETENTION.md).
public struct RetentionChoice: Codable, Hashable, Sendable {
    /// The subscription products it is for; empty: any.
    public var products: [String] = []
    /// Device locales it is for (`fr_FR`), or languages (`fr`: any `fr_…`); empty: any.
    public var locales: [String] = []
    /// Only for subscriptions renewed at least this many times.
    public var minimumRenewals: Int? = nil
    /// true: only subscriptions in billing retry; false: never them; nil: either.
    public var billingRetry: Bool? = nil
    /// The message (uploaded to Apple and approved) to show: its UUID.
    public var messageId: String
    /// A switch-plan message: the product suggested instead.
    public var switchToProductId: String? = nil
    /// A promotional offer message: the app's offer (`offers[]`, kind promotional), signed (V2) per request.
    public var offerId: String? = nil

    public init(
        messageId: String, products: [String] = [], locales: [String] = [], minimumRenewals: Int? = nil, billingRetry: Bool? = nil,
        switchToProductId: String? = nil, offerId: String? = nil
    ) {
        self.messageId = messageId
        self.products = products
        self.locales = locales
        self.minimumRenewals = minimumRenewals
        self.billingRetry = billingRetry
        self.switchToProductId = switchToProductId
        self.offerId = offerId
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case products, locales, minimumRenewals, billingRetry, messageId, switchToProductId, offerId
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        messageId = try c.decode(String.self, forKey: .messageId)
        products = try c.decodeIfPresent([String].self, forKey: .products) ?? []
        locales = try c.decodeIfPresent([String].self, forKey: .locales) ?? []
        minimumRenewals = try c.decodeIfPresent(Int.self, forKey: .minimumRenewals)
        billingRetry = try c.decodeIfPresent(Bool.self, forKey: .billingRetry)
        switchToProductId = try c.decodeIfPresent(String.self, forKey: .switchToProductId)
        offerId = try c.decodeIfPresent(String.self, forKey: .offerId)
    }

    /// What is wrong with the app's list, each naming its entry under `prefix`.
    public static func problems(_ choices: [RetentionChoice], promotionalOffers: Set<String>, products: Set<String>, prefix: String) -> [String] {
        var problems: [String] = []
        for (index, choice) in choices.enumerated() {
            let key = "\(prefix)[\(index)]"
            if UUID(uuidString: choice.messageId) == nil { problems.append("\(key).messageId: the message's UUID") }
            if choice.switchToProductId != nil, choice.offerId != nil {
                problems.append("\(key): switchToProductId or offerId, not both (Apple shows one kind of message)")
            }
            if let product = choice.switchToProductId, !products.contains(product) {
                problems.append("\(key).switchToProductId: '\(product)' is not an auto-renewable product of the app")
            }
            if let offer = choice.offerId, !promotionalOffers.contains(offer) {
                problems.append("\(key).offerId: '\(offer)' is not a promotional offer of the app (offers[])")
            }
            if let renewals = choice.minimumRenewals, renewals < 0 { problems.append("\(key).minimumRenewals: 0 or more") }
        }
        return problems
    }
}

/// What is known of the subscriber when Apple asks.
public struct RetentionFacts: Sendable, Hashable {
    public var productId: String
    public var locale: String
    /// Renewals of the subscription stored so far (0: in its first period); nil when unknown.
    public var renewals: Int?
    public var inBillingRetry: Bool
    /// The app's promotional offers the subscription's owner may take, each by its audience
    /// (`OfferEligibility.promotional`); empty when the server knows no owner. A choice that
    /// answers with an offer applies only to these: a signed offer is never given to someone
    /// the offer is not for.
    public var eligibleOfferIds: Set<String>

    public init(productId: String, locale: String, renewals: Int?, inBillingRetry: Bool, eligibleOfferIds: Set<String> = []) {
        self.productId = productId
        self.locale = locale
        self.renewals = renewals
        self.inBillingRetry = inBillingRetry
        self.eligibleOfferIds = eligibleOfferIds
    }
}

/// The first choice that applies to a subscriber, in the app's order. Pure.
public enum RetentionRule {
    public static func choose(_ choices: [RetentionChoice], facts: RetentionFacts) -> RetentionChoice? {
        choices.first { applies($0, to: facts) }
    }

    static func applies(_ choice: RetentionChoice, to facts: RetentionFacts) -> Bool {
        if !choice.products.isEmpty, !choice.products.contains(facts.productId) { return false }
        if !choice.locales.isEmpty, !choice.locales.contains(where: { matches($0, facts.locale) }) { return false }
        if let minimum = choice.minimumRenewals, (facts.renewals ?? -1) < minimum { return false }
        if let retry = choice.billingRetry, retry != facts.inBillingRetry { return false }
        if let offerId = choice.offerId, choice.switchToProductId == nil, !facts.eligibleOfferIds.contains(offerId) { return false }
        return true
    }

    /// `fr_FR` matches itself (`fr-FR` too); `fr` matches any French locale.
    static func matches(_ wanted: String, _ locale: String) -> Bool {
        let normal = { (text: String) in text.replacingOccurrences(of: "-", with: "_").lowercased() }
        let (want, have) = (normal(wanted), normal(locale))
        return want == have || (!want.contains("_") && have.hasPrefix(want + "_"))
    }
}
