public import Foundation
public import JWTKit

/// An In-App Purchase key from App Store Connect, as the App Store Server API asks for it.
public struct ServerAPICredentials: Sendable, Hashable, Codable {
    /// The issuer id shown above the key list in App Store Connect (`iss`).
    public var issuerId: String
    /// The key's id (`kid`).
    public var keyId: String
    /// The app the calls are about (`bid`).
    public var bundleId: String
    /// The `.p8` file's contents: a PKCS#8 PEM P-256 private key.
    public var privateKeyPEM: String

    public init(issuerId: String, keyId: String, bundleId: String, privateKeyPEM: String) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.bundleId = bundleId
        self.privateKeyPEM = privateKeyPEM
    }
}

/// The claims Apple reads from a Server API bearer token.
public struct ServerAPIClaims: JWTPayload, Equatable {
    public static let audience = "appstoreconnect-v1"
    /// Apple refuses tokens that live longer than this.
    public static let maximumLifetime: TimeInterval = 3600

    public var iss: String
    public var iat: Int64
    public var exp: Int64
    public var aud: String
    public var bid: String

    public init(iss: String, iat: Int64, exp: Int64, aud: String = Self.audience, bid: String) {
        self.iss = iss
        self.iat = iat
        self.exp = exp
        self.aud = aud
        self.bid = bid
    }

    /// Claims are judged by whoever receives the token (the simulator checks them one by one).
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Mints the ES256 bearer token and reuses it until it nears expiry: signing costs a P-256
/// signature, and Apple accepts one token for many calls. `iat` is set back by `clockSkew`
/// so a server clock slightly ahead of Apple's is not refused as "issued in the future".
public actor ServerAPITokenProvider {
    public let credentials: ServerAPICredentials
    private let key: ES256PrivateKey
    private var keys: JWTKeyCollection?
    private let lifetime: TimeInterval
    private let refreshMargin: TimeInterval
    private let clockSkew: TimeInterval
    private var current: (token: String, expires: Date)?
    /// Tokens signed so far (reuse is visible in metrics and tests).
    public private(set) var minted = 0

    public init(
        credentials: ServerAPICredentials, lifetime: TimeInterval = 1200, refreshMargin: TimeInterval = 300, clockSkew: TimeInterval = 60
    ) throws {
        precondition(lifetime + clockSkew <= ServerAPIClaims.maximumLifetime, "Apple refuses tokens living over an hour")
        self.credentials = credentials
        self.lifetime = lifetime
        self.refreshMargin = min(refreshMargin, lifetime / 2)
        self.clockSkew = clockSkew
        key = try ES256PrivateKey(pem: credentials.privateKeyPEM)
    }

    /// A token valid at `now` for at least the refresh margin.
    public func token(now: Date) async throws -> String {
        if let current, now < current.expires.addingTimeInterval(-refreshMargin) { return current.token }
        let issued = now.addingTimeInterval(-clockSkew)
        let expires = now.addingTimeInterval(lifetime)
        let claims = ServerAPIClaims(
            iss: credentials.issuerId, iat: Int64(issued.timeIntervalSince1970), exp: Int64(expires.timeIntervalSince1970),
            bid: credentials.bundleId)
        let kid = JWKIdentifier(string: credentials.keyId)
        let keys: JWTKeyCollection
        if let existing = self.keys {
            keys = existing
        } else {
            keys = await JWTKeyCollection().add(ecdsa: key, kid: kid)
            self.keys = keys
        }
        let token = try await keys.sign(claims, kid: kid)
        current = (token, expires)
        minted += 1
        return token
    }

    /// Forgets the current token (Apple answered 401: perhaps our clock moved).
    public func invalidate() { current = nil }
}
