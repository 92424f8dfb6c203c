import Foundation

/// A win-back offer Apple names for a lapsed user (`GET /v1/subscribers/{appUserId}/offers/win-back`).
public struct WinBackOffer: Codable, Sendable, Hashable {
    public var offerId: String
    public var productId: String
    /// The lapsed subscription whose renewal info names it.
    public var originalTransactionId: String
    /// Whether the app's server configuration lists the offer.
    public var configured: Bool

    public init(offerId: String, productId: String, originalTransactionId: String, configured: Bool) {
        self.offerId = offerId
        self.productId = productId
        self.originalTransactionId = originalTransactionId
        self.configured = configured
    }
}

/// The win-back offers Apple would sell the user now, each once, in Apple's order.
public struct WinBackOffers: WireMessage {
    public static let location = WireLocation.answer(method: "get", path: "/v1/subscribers/{appUserId}/offers/win-back", status: 200)
    public var offers: [WinBackOffer]

    public init(offers: [WinBackOffer]) { self.offers = offers }
}

/// Asks the server to sign a configured promotional offer for the user.
public struct PromotionalOfferRequest: WireMessage {
    public static let location = WireLocation.request(method: "post", path: "/v1/subscribers/{appUserId}/offers/promotional")
    public var productId: String
    public var offerId: String

    public init(productId: String, offerId: String) {
        self.productId = productId
        self.offerId = offerId
    }
}

/// A promotional offer signed for one user: the V1 fields and the V2 compact JWS StoreKit takes.
public struct PromotionalOfferSignature: WireMessage {
    public static let location = WireLocation.schema("PromotionalOfferSignature")

    /// The V1 signature's inputs and result (`Product.PurchaseOption.promotionalOffer(offerID:keyID:nonce:signature:timestamp:)`).
    public struct V1: Codable, Sendable, Hashable {
        public var keyIdentifier: String
        /// Lower-case UUID, new for every signature.
        public var nonce: String
        /// UNIX milliseconds.
        public var timestamp: Int64
        /// Base64 of the DER signature.
        public var signature: String

        public init(keyIdentifier: String, nonce: String, timestamp: Int64, signature: String) {
            self.keyIdentifier = keyIdentifier
            self.nonce = nonce
            self.timestamp = timestamp
            self.signature = signature
        }
    }

    public var productId: String
    public var offerId: String
    /// Why the user may take it (`current_subscriber`, `lapsed_subscriber`).
    public var reason: String
    /// The token the V1 signature covers (lower-case UUID): the purchase must carry it.
    public var appAccountToken: String
    public var v1: V1
    /// For `Product.PurchaseOption.promotionalOffer(_:compactJWS:)`.
    public var jws: String

    public init(productId: String, offerId: String, reason: String, appAccountToken: String, v1: V1, jws: String) {
        self.productId = productId
        self.offerId = offerId
        self.reason = reason
        self.appAccountToken = appAccountToken
        self.v1 = v1
        self.jws = jws
    }
}

/// Asks whether the user may take a product's introductory offer.
public struct IntroductoryOfferRequest: WireMessage {
    public static let location = WireLocation.request(method: "post", path: "/v1/subscribers/{appUserId}/offers/introductory")
    public var productId: String

    public init(productId: String) { self.productId = productId }
}

/// The server's decision on a product's introductory offer for this user.
public struct IntroductoryEligibility: WireMessage {
    public static let location = WireLocation.schema("IntroductoryOfferEligibility")
    public var productId: String
    public var eligible: Bool
    /// `new_to_group` or `subscribed_in_group`.
    public var reason: String
    /// For StoreKit's `introductoryOfferEligibility(compactJWS:)`; nil when the server knows no
    /// transaction of the user (Apple's JWS names one; StoreKit then decides alone).
    public var jws: String?

    public init(productId: String, eligible: Bool, reason: String, jws: String?) {
        self.productId = productId
        self.eligible = eligible
        self.reason = reason
        self.jws = jws
    }
}
