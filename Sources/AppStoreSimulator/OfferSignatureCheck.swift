import Crypto
import Foundation

/// What a purchase carries to take a promotional offer, as StoreKit sends it: the V1 fields
/// (`offerId`, `keyId`, `nonce`, `timestamp`, `signature`) or the V2 compact JWS.
struct SignedPromotionalOffer: Codable, Sendable, Hashable {
    var offerId: String?
    var keyId: String?
    var nonce: String?
    var timestamp: Int64?
    var signature: String?
    var jws: String?
}

/// An offer set up for a product in the simulated App Store Connect: what it sells at.
public struct SimulatedOffer: Codable, Hashable, Sendable {
    public var id: String
    /// `PAY_AS_YOU_GO`, `PAY_UP_FRONT` or `FREE_TRIAL`.
    public var discountType: String
    /// The offer's price for its period, in micros (0 for a free trial).
    public var priceMicros: Int64
    /// How long the offer's price lasts (`P1M`); the product's period when nil.
    public var period: String?
    /// A win-back offer: never sold by signature; named in a lapsed subscriber's renewal info
    /// (`eligibleWinBackOfferIds`).
    public var winBack: Bool? = nil

    public init(id: String, discountType: String, priceMicros: Int64, period: String? = nil, winBack: Bool? = nil) {
        self.winBack = winBack
        self.id = id
        self.discountType = discountType
        self.priceMicros = priceMicros
        self.period = period
    }
}

/// The App Store's checks of a promotional offer's signature before it sells at the offer's
/// price, failing with StoreKit's purchase errors: `missingOfferParameters`,
/// `invalidOfferIdentifier` (no such offer of the product), `invalidOfferSignature` (an unknown
/// key, a signature over other values, a timestamp older than a day, a nonce used before).
enum OfferSignatureCheck {
    /// Apple accepts a signature for 24 hours from its timestamp (or `iat`).
    static let lifetime: TimeInterval = 86_400

    static func refused(_ code: String, _ message: String) -> SimulatorState.Failure {
        SimulatorState.Failure(status: 400, code: code, message: message)
    }

    /// The offer the signature admits, after every check; `usedNonces` gains its nonce.
    static func check(
        _ signed: SignedPromotionalOffer, app: SimulatedApp, product: SimulatedProduct, appAccountToken: String?, now: Date,
        usedNonces: inout Set<String>
    ) throws(SimulatorState.Failure) -> SimulatedOffer {
        let (offerId, nonce, issued) =
            if let jws = signed.jws {
                try checkJWS(jws, app: app, product: product)
            } else {
                try checkV1(signed, app: app, product: product, appAccountToken: appAccountToken)
            }
        guard let offer = product.offers?.first(where: { $0.id == offerId && $0.winBack != true }) else {
            throw refused("invalidOfferIdentifier", "no offer '\(offerId)' of \(product.productId)")
        }
        guard now.timeIntervalSince(issued) <= lifetime, issued.timeIntervalSince(now) <= 300 else {
            throw refused("invalidOfferSignature", "the signature's timestamp is more than a day old or in the future")
        }
        guard usedNonces.insert(app.bundleId + "\u{0}" + nonce.lowercased()).inserted else {
            throw refused("invalidOfferSignature", "the nonce was used before")
        }
        return offer
    }

    private static func key(_ keyId: String, app: SimulatedApp) throws(SimulatorState.Failure) -> (SimulatedAPIKey, P256.Signing.PublicKey) {
        guard let known = app.serverAPIKeys?.first(where: { $0.keyId == keyId }),
            let key = try? P256.Signing.PublicKey(pemRepresentation: known.publicKeyPEM)
        else { throw refused("invalidOfferSignature", "key '\(keyId)' is not an In-App Purchase key of the app") }
        return (known, key)
    }

    private static func checkV1(
        _ signed: SignedPromotionalOffer, app: SimulatedApp, product: SimulatedProduct, appAccountToken: String?
    ) throws(SimulatorState.Failure) -> (String, String, Date) {
        guard let offerId = signed.offerId, let keyId = signed.keyId, let nonce = signed.nonce, let timestamp = signed.timestamp,
            let signature = signed.signature
        else { throw refused("missingOfferParameters", "offerId, keyId, nonce, timestamp and signature, or jws") }
        let (_, key) = try key(keyId, app: app)
        let text = [
            app.bundleId, keyId, product.productId, offerId, (appAccountToken ?? "").lowercased(), nonce.lowercased(), String(timestamp),
        ].joined(separator: "\u{2063}")
        guard let der = Data(base64Encoded: signature), let parsed = try? P256.Signing.ECDSASignature(derRepresentation: der),
            key.isValidSignature(parsed, for: Data(text.utf8))
        else { throw refused("invalidOfferSignature", "the signature does not verify for this app, key, product, offer, token, nonce and time") }
        return (offerId, nonce, Date(timeIntervalSince1970: Double(timestamp) / 1000))
    }

    private static func checkJWS(_ jws: String, app: SimulatedApp, product: SimulatedProduct) throws(SimulatorState.Failure) -> (String, String, Date)
    {
        let claims = try verifiedClaims(jws, app: app, audience: "promotional-offer")
        guard let nonce = claims["nonce"] as? String, let iat = (claims["iat"] as? NSNumber)?.doubleValue else {
            throw refused("invalidOfferSignature", "aud, bid, iss, nonce and iat must be the app's promotional offer claims")
        }
        guard claims["productId"] as? String == product.productId, let offerId = claims["offerIdentifier"] as? String else {
            throw refused("invalidOfferIdentifier", "the JWS is for another product or names no offer")
        }
        return (offerId, nonce, Date(timeIntervalSince1970: iat))
    }

    /// StoreKit's `introductoryOfferEligibility(compactJWS:)`: whether the developer's server says
    /// the customer may take the product's introductory offer, after the same checks as a
    /// promotional offer's JWS (the app's key, ES256, `aud: introductory-offer-eligibility`, the
    /// app's `bid` and `iss`, this product, a day's validity).
    static func introductoryEligibility(
        _ jws: String, app: SimulatedApp, product: SimulatedProduct, now: Date
    ) throws(SimulatorState.Failure)
        -> Bool
    {
        let claims = try verifiedClaims(jws, app: app, audience: "introductory-offer-eligibility")
        guard let allowed = claims["allowIntroductoryOffer"] as? Bool, let iat = (claims["iat"] as? NSNumber)?.doubleValue,
            claims["nonce"] is String
        else { throw refused("invalidOfferSignature", "allowIntroductoryOffer, nonce and iat are required") }
        guard claims["productId"] as? String == product.productId else {
            throw refused("invalidOfferIdentifier", "the eligibility JWS is for another product")
        }
        let issued = Date(timeIntervalSince1970: iat)
        guard now.timeIntervalSince(issued) <= lifetime, issued.timeIntervalSince(now) <= 300 else {
            throw refused("invalidOfferSignature", "the eligibility JWS is more than a day old or from the future")
        }
        return allowed
    }

    /// A compact JWS's claims once it verifies with one of the app's In-App Purchase keys and
    /// names `audience`, the app's bundle id and the key's issuer.
    private static func verifiedClaims(_ jws: String, app: SimulatedApp, audience: String) throws(SimulatorState.Failure) -> [String: Any] {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = base64URL(parts[0]), let claimsData = base64URL(parts[1]), let raw = base64URL(parts[2]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any]
        else { throw refused("invalidOfferSignature", "not a compact JWS") }
        guard header["alg"] as? String == "ES256", let keyId = header["kid"] as? String else {
            throw refused("invalidOfferSignature", "the JWS must be ES256 with the key's id as kid")
        }
        let (known, key) = try key(keyId, app: app)
        guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw),
            key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { throw refused("invalidOfferSignature", "the JWS signature does not verify with key '\(keyId)'") }
        guard claims["aud"] as? String == audience, claims["bid"] as? String == app.bundleId, claims["iss"] as? String == known.issuerId
        else { throw refused("invalidOfferSignature", "aud, bid and iss must be the app's \(audience) claims") }
        return claims
    }

    private static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }
}
