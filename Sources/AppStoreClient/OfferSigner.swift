import Crypto
public import Foundation
public import JWTKit

/// Signs what StoreKit takes from a developer's server to apply an offer, with an In-App
/// Purchase key (the key never ships in the app): the promotional offer signature of the
/// original API (V1), and the compact JWS of StoreKit's `promotionalOffer(_:compactJWS:)` and
/// `introductoryOfferEligibility(compactJWS:)` (V2). No I/O: time and nonces are inputs.
public struct OfferSigner: Sendable {
    public let credentials: ServerAPICredentials
    private let key: ES256PrivateKey
    private let signingKey: P256.Signing.PrivateKey

    public init(credentials: ServerAPICredentials) throws {
        self.credentials = credentials
        key = try ES256PrivateKey(pem: credentials.privateKeyPEM)
        signingKey = try P256.Signing.PrivateKey(pemRepresentation: credentials.privateKeyPEM)
    }

    /// A V1 promotional offer signature: what StoreKit's `Product.PurchaseOption.promotionalOffer(
    /// offerID:keyID:nonce:signature:timestamp:)` (and SKPaymentDiscount) take.
    public struct PromotionalV1: Codable, Sendable, Hashable {
        public var keyIdentifier: String
        /// Lower-case UUID, new for every signature.
        public var nonce: String
        /// UNIX milliseconds; Apple accepts the signature for 24 hours from it.
        public var timestamp: Int64
        /// Base64 of the DER ECDSA signature.
        public var signature: String
    }

    /// The text V1 signs: bundle id, key id, product id, offer id, app account token and nonce
    /// (both lower-case; the token may be empty) and the timestamp, joined by U+2063.
    public func promotionalV1Payload(productId: String, offerId: String, appAccountToken: String, nonce: UUID, timestamp: Int64) -> String {
        [
            credentials.bundleId, credentials.keyId, productId, offerId, appAccountToken.lowercased(), nonce.uuidString.lowercased(),
            String(timestamp),
        ].joined(separator: "\u{2063}")
    }

    public func promotionalV1(productId: String, offerId: String, appAccountToken: String, nonce: UUID, timestamp: Int64) throws -> PromotionalV1 {
        let payload = promotionalV1Payload(
            productId: productId, offerId: offerId, appAccountToken: appAccountToken, nonce: nonce, timestamp: timestamp)
        let signature = try signingKey.signature(for: Data(payload.utf8))
        return PromotionalV1(
            keyIdentifier: credentials.keyId, nonce: nonce.uuidString.lowercased(), timestamp: timestamp,
            signature: signature.derRepresentation.base64EncodedString())
    }

    /// The claims of a V2 JWS: Apple's common ones (`iss`, `bid`, `aud`, `iat`, `nonce`) and
    /// the request's own.
    public struct Claims: JWTPayload, Equatable {
        public var iss: String
        public var bid: String
        public var aud: String
        public var iat: Int64
        public var nonce: String
        public var productId: String
        public var offerIdentifier: String?
        public var transactionId: String?
        public var allowIntroductoryOffer: Bool?

        /// Judged by StoreKit and the App Store, not here.
        public func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    public static let promotionalAudience = "promotional-offer"
    public static let introductoryAudience = "introductory-offer-eligibility"

    /// A V2 promotional offer JWS for `productId` and `offerId`; `transactionId`: any transaction
    /// of the customer (their app transaction's id will do), recommended by Apple.
    public func promotionalV2(productId: String, offerId: String, transactionId: String?, now: Date, nonce: UUID) async throws -> String {
        try await sign(
            Claims(
                iss: credentials.issuerId, bid: credentials.bundleId, aud: Self.promotionalAudience, iat: Self.seconds(now),
                nonce: nonce.uuidString.lowercased(), productId: productId, offerIdentifier: offerId, transactionId: transactionId))
    }

    /// The JWS that tells StoreKit whether the customer may take `productId`'s introductory offer.
    public func introductoryEligibility(productId: String, allow: Bool, transactionId: String, now: Date, nonce: UUID) async throws -> String {
        try await sign(
            Claims(
                iss: credentials.issuerId, bid: credentials.bundleId, aud: Self.introductoryAudience, iat: Self.seconds(now),
                nonce: nonce.uuidString.lowercased(), productId: productId, transactionId: transactionId, allowIntroductoryOffer: allow))
    }

    private func sign(_ claims: Claims) async throws -> String {
        let kid = JWKIdentifier(string: credentials.keyId)
        let keys = await JWTKeyCollection().add(ecdsa: key, kid: kid)
        return try await keys.sign(claims, kid: kid)
    }

    private static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }
}
