import Foundation
import JWTKit
import Synchronization

/// Checks the user tokens an app's backend issues (`Storekeeper-User-Token`): the signature
/// with jwt-kit against the app's HS256 secret, ES256 or EdDSA (Ed25519) public keys, then the time claims
/// against this server's clock (injected), with the configured skew. Returns the user (`sub`).
final class UserTokenVerifier: Sendable {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim?
        var nbf: NotBeforeClaim?
        var iss: IssuerClaim?
        var aud: AudienceClaim?

        /// Time claims are checked by the verifier against its own clock.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Why a token was refused, for the 401's message.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    let policy: UserTokenPolicy
    /// The `aud` a token that names one must include: the configured audience, else the app's id.
    /// A token minted for another app that shares the secret names that app and is refused.
    let audience: String
    private let keys = Mutex<[JWTKeyCollection]?>(nil)

    init(policy: UserTokenPolicy, appId: String) {
        self.policy = policy
        audience = policy.audience ?? appId
    }

    /// One collection per configured key, each holding it as its only (default) key. A
    /// collection given several keys without ids keeps only the last one as its default, and
    /// its `iteratingKeys` tries only keys that have ids, so a second key (a rotation, or HS256
    /// beside ES256) would never verify anything.
    private func collections() async throws -> [JWTKeyCollection] {
        if let built = keys.withLock({ $0 }) { return built }
        var built: [JWTKeyCollection] = []
        if let secret = policy.hs256Secret { built.append(await JWTKeyCollection().add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)) }
        for pem in policy.es256PublicKeysPEM ?? [] { built.append(await JWTKeyCollection().add(ecdsa: try ES256PublicKey(pem: pem))) }
        for key in policy.eddsaPublicKeys ?? [] { built.append(await JWTKeyCollection().add(eddsa: try Self.eddsaKey(key))) }
        keys.withLock { $0 = built }
        return built
    }

    /// The claims of the first key that verifies the token.
    private func verified(_ token: String) async throws -> Claims {
        for collection in try await collections() {
            if let claims = try? await collection.verify(token, as: Claims.self) { return claims }
        }
        throw Refusal(description: "user token signature or shape is not valid")
    }

    /// An Ed25519 public key from PEM, or from the JWK's `x`.
    static func eddsaKey(_ text: String) throws -> EdDSA.PublicKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return trimmed.hasPrefix("-----BEGIN") ? try EdDSA.PublicKey(pem: trimmed) : try EdDSA.PublicKey(x: trimmed, curve: .ed25519)
    }

    /// The app user id the token names.
    func user(from token: String, now: Date) async throws -> String {
        guard token.utf8.count <= 8_192 else { throw Refusal(description: "user token longer than 8 KB") }
        let claims = try await verified(token)
        let skew = policy.clockSkewSeconds
        guard claims.exp.value.addingTimeInterval(skew) > now else { throw Refusal(description: "user token expired") }
        guard claims.exp.value <= now.addingTimeInterval(policy.maximumLifetimeSeconds + skew) else {
            throw Refusal(description: "user token lives longer than maximumLifetimeSeconds")
        }
        if let iat = claims.iat?.value {
            guard iat <= now.addingTimeInterval(skew) else { throw Refusal(description: "user token issued in the future") }
            guard claims.exp.value.timeIntervalSince(iat) <= policy.maximumLifetimeSeconds else {
                throw Refusal(description: "user token lives longer than maximumLifetimeSeconds")
            }
        }
        if let nbf = claims.nbf?.value, nbf > now.addingTimeInterval(skew) {
            throw Refusal(description: "user token not valid yet")
        }
        if let issuer = policy.issuer, claims.iss?.value != issuer { throw Refusal(description: "user token from another issuer") }
        if let aud = claims.aud, !aud.value.contains(audience) { throw Refusal(description: "user token for another audience") }
        let user = claims.sub.value
        guard !user.isEmpty else { throw Refusal(description: "user token names no user") }
        return user
    }
}
