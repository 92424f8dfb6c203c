import Foundation

/// What Apple's Retention Messaging API posts to the developer's Get Retention Message endpoint
/// (the realtime URL) while a subscriber views their subscription and may cancel.
public struct RealtimeRequestBody: Codable, Hashable, Sendable {
    /// A compact JWS signed by the App Store (`DecodedRealtimeRequestBody`).
    public var signedPayload: String?

    public init(signedPayload: String?) { self.signedPayload = signedPayload }
}

/// The signed request's payload. Every field optional, as read: a missing one is refused by
/// whoever needs it, never a crash.
public struct DecodedRealtimeRequestBody: Codable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var appAppleId: Int64?
    public var productId: String?
    /// The device's locale (`en_US`).
    public var userLocale: String?
    /// A UUID per request.
    public var requestIdentifier: String?
    public var signedDate: AppleDate?
    public var environment: AppStoreEnvironment?

    public init(
        originalTransactionId: String?, appAppleId: Int64?, productId: String?, userLocale: String?, requestIdentifier: String?,
        signedDate: AppleDate?, environment: AppStoreEnvironment?
    ) {
        self.originalTransactionId = originalTransactionId
        self.appAppleId = appAppleId
        self.productId = productId
        self.userLocale = userLocale
        self.requestIdentifier = requestIdentifier
        self.signedDate = signedDate
        self.environment = environment
    }
}

/// The answer: at most one of a message, a switch of plan, or a promotional offer (none: Apple
/// shows the app's default message).
public struct RealtimeResponseBody: Codable, Hashable, Sendable {
    public struct Message: Codable, Hashable, Sendable {
        public var messageIdentifier: String
        public init(messageIdentifier: String) { self.messageIdentifier = messageIdentifier }
    }

    public struct AlternateProduct: Codable, Hashable, Sendable {
        public var messageIdentifier: String
        public var productId: String
        public init(messageIdentifier: String, productId: String) {
            self.messageIdentifier = messageIdentifier
            self.productId = productId
        }
    }

    public struct PromotionalOffer: Codable, Hashable, Sendable {
        public var messageIdentifier: String
        /// The offer's V2 compact JWS (`aud: promotional-offer`).
        public var promotionalOfferSignatureV2: String
        public init(messageIdentifier: String, promotionalOfferSignatureV2: String) {
            self.messageIdentifier = messageIdentifier
            self.promotionalOfferSignatureV2 = promotionalOfferSignatureV2
        }
    }

    public var message: Message?
    public var alternateProduct: AlternateProduct?
    public var promotionalOffer: PromotionalOffer?

    public init(message: Message? = nil, alternateProduct: AlternateProduct? = nil, promotionalOffer: PromotionalOffer? = nil) {
        self.message = message
        self.alternateProduct = alternateProduct
        self.promotionalOffer = promotionalOffer
    }
}
