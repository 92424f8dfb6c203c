import Foundation

extension Product {
    /// As Apple documents it (developer.apple.com/documentation/storekit/product/purchaseoption):
    /// an opaque option of a purchase, made only by its static functions. The stand-in keeps what
    /// each one carries (`standInValue`) for its store to apply as the App Store would.
    @available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
    public struct PurchaseOption: Sendable, Hashable {
        /// Not StoreKit's: what the option carries.
        public enum StandInValue: Sendable, Hashable {
            case appAccountToken(UUID)
            case introductoryOfferEligibility(compactJWS: String)
            case promotionalOffer(offerID: String, compactJWS: String)
            case promotionalOfferV1(offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int)
            case winBackOffer(offerID: String?)
            case billingPlanType(String)
        }

        public let standInValue: StandInValue

        /// (…/purchaseoption/appaccounttoken(_:))
        public static func appAccountToken(_ token: UUID) -> Product.PurchaseOption {
            PurchaseOption(standInValue: .appAccountToken(token))
        }

        /// (…/purchaseoption/introductoryoffereligibility(compactjws:)): one option, back-deployed
        /// before iOS 18.4 and macOS 15.4.
        public static func introductoryOfferEligibility(compactJWS: String) -> Product.PurchaseOption {
            PurchaseOption(standInValue: .introductoryOfferEligibility(compactJWS: compactJWS))
        }

        /// (…/purchaseoption/promotionaloffer(_:compactjws:)): an array of options, back-deployed
        /// before iOS 26 and macOS 26.
        public static func promotionalOffer(_ offerID: String, compactJWS: String) -> [Product.PurchaseOption] {
            [PurchaseOption(standInValue: .promotionalOffer(offerID: offerID, compactJWS: compactJWS))]
        }

        /// (…/purchaseoption/winbackoffer(_:)): the offer value, from the product's
        /// `subscription.winBackOffers`.
        @available(iOS 18.0, macOS 15.0, tvOS 18.0, watchOS 11.0, visionOS 2.0, *)
        public static func winBackOffer(_ offer: Product.SubscriptionOffer) -> Product.PurchaseOption {
            PurchaseOption(standInValue: .winBackOffer(offerID: offer.id))
        }

        /// (…/purchaseoption/billingplantype(_:)): the plan of a subscription sold with a 12-month
        /// commitment.
        @available(iOS 26.4, macOS 26.4, tvOS 26.4, watchOS 26.4, visionOS 26.4, *)
        public static func billingPlanType(_ type: Product.SubscriptionInfo.BillingPlanType) -> Product.PurchaseOption {
            PurchaseOption(standInValue: .billingPlanType(type.rawValue))
        }

        /// (…/purchaseoption/promotionaloffer(offerid:keyid:nonce:signature:timestamp:)):
        /// deprecated in iOS 26 and macOS 26. `timestamp` in UNIX milliseconds.
        public static func promotionalOffer(
            offerID: String, keyID: String, nonce: UUID, signature: Data, timestamp: Int
        )
            -> Product.PurchaseOption
        {
            PurchaseOption(
                standInValue: .promotionalOfferV1(offerID: offerID, keyID: keyID, nonce: nonce, signature: signature, timestamp: timestamp))
        }
    }
}
