extension Product {
    /// As Apple documents it (developer.apple.com/documentation/storekit/product/subscriptioninfo):
    /// an auto-renewable subscription's details, with the members the adapter uses.
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
    public struct SubscriptionInfo: Sendable, Hashable {
        /// (…/subscriptioninfo/winbackoffers): every win-back offer configured for the
        /// subscription, whatever the customer's eligibility.
        @available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
        public var winBackOffers: [Product.SubscriptionOffer] { standInWinBackOffers }

        let standInWinBackOffers: [Product.SubscriptionOffer]

        /// (…/subscriptioninfo/billingplantype): how a subscription with a 12-month commitment is
        /// billed. The raw values are the stand-in's (Apple's transaction names).
        @available(iOS 26.4, macOS 26.4, tvOS 26.4, watchOS 26.4, visionOS 26.4, *)
        public struct BillingPlanType: RawRepresentable, Hashable, Sendable {
            public let rawValue: String
            public init(rawValue: String) { self.rawValue = rawValue }
            /// (…/billingplantype/monthly)
            public static let monthly = BillingPlanType(rawValue: "MONTHLY")
            /// (…/billingplantype/upfront)
            public static let upFront = BillingPlanType(rawValue: "BILLED_UPFRONT")
        }

        /// Not StoreKit's: the subscription as the stand-in's store lists it.
        public init(standInWinBackOffers: [Product.SubscriptionOffer]) {
            self.standInWinBackOffers = standInWinBackOffers
        }
    }

    /// As Apple documents it (…/product/subscriptionoffer): an offer of a subscription.
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
    public struct SubscriptionOffer: Sendable, Hashable {
        /// (…/subscriptionoffer/id): nil for an introductory offer.
        public let id: String?
        /// (…/subscriptionoffer/type-swift.property)
        public let type: Product.SubscriptionOffer.OfferType

        /// Not StoreKit's: an offer as the stand-in's store lists it.
        public init(standInID id: String?, type: Product.SubscriptionOffer.OfferType) {
            self.id = id
            self.type = type
        }

        /// (…/subscriptionoffer/offertype): the kinds of offer, as static values.
        public struct OfferType: Sendable, Hashable {
            let name: String
            /// (…/offertype/introductory)
            public static let introductory = OfferType(name: "introductory")
            /// (…/offertype/promotional)
            public static let promotional = OfferType(name: "promotional")
            /// (…/offertype/winback)
            @available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
            public static let winBack = OfferType(name: "winBack")
        }
    }
}
