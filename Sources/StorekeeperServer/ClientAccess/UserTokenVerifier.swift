import Foundation
import JWTKit
import Synchronization

/// Checks the user tokens an app's backend issues (`Storekeeper-User-Token`): the signature
/// with jwt-kit against the app's HS256 secret or ES256 public keys, then the time claims
/// against this server's clock (injected), with the configured skew. Returns the user (`sub`).
final class UserTokenVerifier: Sendable {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim?
        var nbf: NotBeforeClaim?
        var iss: IssuerClaim?

        /// Time claims are checked by the verifier against its own clock.
        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// Why a token was refused, for the 401's message.
    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    let policy: UserTokenPolicy
    private let keys = Mutex<JWTKeyCollection?>(nil)

    init(policy: UserTokenPolicy) {
        self.policy = policy
    }

    private func collection() async throws -> JWTKeyCollection {
        if let built = keys.withLock({ $0 }) { return built }
        let built = JWTKeyCollection()
        if let secret = policy.hs256Secret { await built.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256) }
        for pem in policy.es256PublicKeysPEM ?? [] { await built.add(ecdsa: try ES256PublicKey(pem: pem)) }
        keys.withLock { $0 = built }
        return built
    }

    /// The app user id the token names.
    func user(from token: String, now: Date) async throws -> String {
        guard token.utf8.count <= 8_192 else { throw Refusal(description: "user token longer than 8 KB") }
        let claims: Claims
        do {
            claims = try await collection().verify(token, as: Claims.self, iteratingKeys: true)
        } catch {
            throw Refusal(description: "user token signature or shape is not valid")
        }
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
        let user = claims.sub.value
        guard !user.isEmpty else { throw Refusal(description: "user token names no user") }
        return user
    }
}
