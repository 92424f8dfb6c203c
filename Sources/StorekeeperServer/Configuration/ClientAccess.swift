import Foundation
import JWTKit

/// How the app itself (not its backend) may call Storekeeper: with a publishable client key,
/// which an app binary can carry, limited to the calls one user makes about themselves.
public struct ClientAccess: Codable, Sendable, Hashable {
    /// Sent as `Authorization: Bearer …` by the app. Publishable: it only opens the client
    /// routes, and with user tokens on, only for the user a token names.
    public var key: String
    /// Tokens the app's backend issues to say who the user is. When set, every client call
    /// needs one, and a user may act only as themselves.
    public var userTokens: UserTokenPolicy?
    /// Without a user token, a signed transaction is accepted for a user only when its
    /// `appAccountToken` is the one derived from that user's id (`AppAccountToken`); receipts,
    /// which carry no such token, are refused. Reads name the user in the path, so the app
    /// user id acts as the secret: use unguessable ids.
    public var allowAnonymous: Bool = false
    /// Calls per second one client key may make, across its users (a token bucket of twice
    /// this, at least 10): an overload guard well above normal use, charged only by calls whose
    /// user token verified (or anonymous calls within their address's limit).
    public var keyRatePerSecond: Double = 1_000
    /// Calls per second one user may make through the client key (a bucket of ten times this,
    /// at least 10).
    public var userRatePerSecond: Double = 2
    /// Calls per second one network address may make through the client key without a valid
    /// user token (failed, missing, or anonymous; a bucket of ten times this, at least 10).
    public var sourceRatePerSecond: Double = 5
    /// Keys that sign answers to client calls carrying `Storekeeper-Nonce` (the first signs;
    /// empty: answers are not signed).
    public var signingKeys: [ResponseSigningKey] = []
    /// Users may spend their own credits from the app (`POST …/credits/spend` with their user
    /// token). Off by default: a game that spends on the server keeps the spending there.
    public var spendCredits: Bool = false

    public init(
        key: String, userTokens: UserTokenPolicy? = nil, allowAnonymous: Bool = false, keyRatePerSecond: Double = 1_000,
        userRatePerSecond: Double = 2, sourceRatePerSecond: Double = 5, signingKeys: [ResponseSigningKey] = []
    ) {
        self.sourceRatePerSecond = sourceRatePerSecond
        self.signingKeys = signingKeys
        self.key = key
        self.userTokens = userTokens
        self.allowAnonymous = allowAnonymous
        self.keyRatePerSecond = keyRatePerSecond
        self.userRatePerSecond = userRatePerSecond
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case key, userTokens, allowAnonymous, keyRatePerSecond, userRatePerSecond, sourceRatePerSecond, signingKeys, spendCredits
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        key = try c.decode(String.self, forKey: .key)
        userTokens = try c.decodeIfPresent(UserTokenPolicy.self, forKey: .userTokens)
        allowAnonymous = try c.decodeIfPresent(Bool.self, forKey: .allowAnonymous) ?? false
        keyRatePerSecond = try c.decodeIfPresent(Double.self, forKey: .keyRatePerSecond) ?? 1_000
        userRatePerSecond = try c.decodeIfPresent(Double.self, forKey: .userRatePerSecond) ?? 2
        sourceRatePerSecond = try c.decodeIfPresent(Double.self, forKey: .sourceRatePerSecond) ?? 5
        signingKeys = try c.decodeIfPresent([ResponseSigningKey].self, forKey: .signingKeys) ?? []
        spendCredits = try c.decodeIfPresent(Bool.self, forKey: .spendCredits) ?? false
    }

    /// Problems with this configuration, each naming its key under `prefix`.
    func problems(prefix: String) -> [String] {
        var problems: [String] = []
        if key.count < 16 { problems.append("\(prefix).key: must be at least 16 characters") }
        if userTokens == nil, !allowAnonymous {
            problems.append("\(prefix): set userTokens, or allowAnonymous: true (a client key must know who the user is)")
        }
        if !(keyRatePerSecond > 0) || !(userRatePerSecond > 0) || !(sourceRatePerSecond > 0) {
            problems.append("\(prefix): keyRatePerSecond, userRatePerSecond and sourceRatePerSecond must be positive")
        }
        if let userTokens { problems += userTokens.problems(prefix: "\(prefix).userTokens") }
        if spendCredits, userTokens == nil { problems.append("\(prefix).spendCredits: needs userTokens (only a proven user may spend)") }
        var ids = Set<String>()
        for (index, key) in signingKeys.enumerated() {
            if key.id.isEmpty || key.id.contains(",") || !ids.insert(key.id).inserted {
                problems.append("\(prefix).signingKeys[\(index)].id: must be non-empty, unique and without ','")
            }
            if (try? ResponseSigner(key)) == nil {
                problems.append("\(prefix).signingKeys[\(index)].privateKeyPEM: not a PEM P-256 private key")
            }
        }
        return problems
    }
}

/// Short-lived JWTs from the app's backend naming the user (`sub`). HS256 with a shared secret,
/// or ES256 with the backend's public keys (several, for rotation).
public struct UserTokenPolicy: Codable, Sendable, Hashable {
    /// HS256 secret shared with the app's backend (at least 32 bytes).
    public var hs256Secret: String?
    /// ES256 public keys (PEM, P-256), any of which may have signed a token.
    public var es256PublicKeysPEM: [String]?
    /// Ed25519 public keys (EdDSA tokens), each as PEM or as the JWK's `x` (the 32-byte key,
    /// base64url), any of which may have signed a token.
    public var eddsaPublicKeys: [String]?
    /// When set, a token's `iss` must equal it.
    public var issuer: String?
    /// A token that carries `aud` must list this (default: the app's id), so a token minted for
    /// another app sharing the secret is refused. Tokens without `aud` are accepted.
    public var audience: String?
    /// Longest accepted lifetime (`exp` − `iat`), and how far `exp` may be in the future.
    public var maximumLifetimeSeconds: Double = 3_600
    /// Tolerated difference between the backend's clock and this server's.
    public var clockSkewSeconds: Double = 60

    public init(
        hs256Secret: String? = nil, es256PublicKeysPEM: [String]? = nil, eddsaPublicKeys: [String]? = nil, issuer: String? = nil,
        audience: String? = nil, maximumLifetimeSeconds: Double = 3_600, clockSkewSeconds: Double = 60
    ) {
        self.hs256Secret = hs256Secret
        self.es256PublicKeysPEM = es256PublicKeysPEM
        self.eddsaPublicKeys = eddsaPublicKeys
        self.issuer = issuer
        self.audience = audience
        self.maximumLifetimeSeconds = maximumLifetimeSeconds
        self.clockSkewSeconds = clockSkewSeconds
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case hs256Secret, es256PublicKeysPEM, eddsaPublicKeys, issuer, audience, maximumLifetimeSeconds, clockSkewSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        hs256Secret = try c.decodeIfPresent(String.self, forKey: .hs256Secret)
        es256PublicKeysPEM = try c.decodeIfPresent([String].self, forKey: .es256PublicKeysPEM)
        eddsaPublicKeys = try c.decodeIfPresent([String].self, forKey: .eddsaPublicKeys)
        issuer = try c.decodeIfPresent(String.self, forKey: .issuer)
        audience = try c.decodeIfPresent(String.self, forKey: .audience)
        maximumLifetimeSeconds = try c.decodeIfPresent(Double.self, forKey: .maximumLifetimeSeconds) ?? 3_600
        clockSkewSeconds = try c.decodeIfPresent(Double.self, forKey: .clockSkewSeconds) ?? 60
    }

    func problems(prefix: String) -> [String] {
        var problems: [String] = []
        if hs256Secret == nil, (es256PublicKeysPEM ?? []).isEmpty, (eddsaPublicKeys ?? []).isEmpty {
            problems.append("\(prefix): set hs256Secret, es256PublicKeysPEM or eddsaPublicKeys")
        }
        for (index, pem) in (es256PublicKeysPEM ?? []).enumerated() where (try? ES256PublicKey(pem: pem)) == nil {
            problems.append("\(prefix).es256PublicKeysPEM[\(index)]: not a P-256 public key in PEM")
        }
        for (index, key) in (eddsaPublicKeys ?? []).enumerated() where (try? UserTokenVerifier.eddsaKey(key)) == nil {
            problems.append("\(prefix).eddsaPublicKeys[\(index)]: not an Ed25519 public key (PEM, or the 32-byte key in base64url)")
        }
        if let secret = hs256Secret, secret.utf8.count < 32 { problems.append("\(prefix).hs256Secret: must be at least 32 bytes") }
        if !(maximumLifetimeSeconds > 0) { problems.append("\(prefix).maximumLifetimeSeconds: must be positive") }
        if !(clockSkewSeconds >= 0) || clockSkewSeconds > 600 { problems.append("\(prefix).clockSkewSeconds: must be 0-600") }
        return problems
    }
}
