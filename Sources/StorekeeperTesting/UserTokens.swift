public import Crypto
public import Foundation

/// User tokens as an app's backend mints them, built here from RFC 7515, RFC 7518, RFC 8037
/// and RFC 7519 with swift-crypto, rather than with the library the server checks them with.
public enum UserTokens {
    /// The backend's key.
    public enum Signer {
        case hs256(secret: String)
        /// ES256: the signature is r ‖ s, 64 bytes (RFC 7518 §3.4).
        case es256(P256.Signing.PrivateKey)
        /// EdDSA over Ed25519 (RFC 8037).
        case eddsa(Curve25519.Signing.PrivateKey)
    }

    public static func token(_ claims: [String: Any], signer: Signer) throws -> String {
        let algorithm =
            switch signer {
            case .hs256: "HS256"
            case .es256: "ES256"
            case .eddsa: "EdDSA"
            }
        let header = base64URL(Data(#"{"alg":"\#(algorithm)","typ":"JWT"}"#.utf8))
        let payload = base64URL(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let input = Data("\(header).\(payload)".utf8)
        let signature: Data =
            switch signer {
            case .hs256(let secret): Data(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: Data(secret.utf8))))
            case .es256(let key): try key.signature(for: input).rawRepresentation
            case .eddsa(let key): try key.signature(for: input)
            }
        return "\(header).\(payload).\(base64URL(signature))"
    }

    public static func hs256(_ claims: [String: Any], secret: String) throws -> String {
        try token(claims, signer: .hs256(secret: secret))
    }

    /// A token for `user`, issued at `now`, valid for `lifetime` seconds.
    public static func hs256(user: String, secret: String, now: Date, lifetime: Int = 300) throws -> String {
        let issued = Int(now.timeIntervalSince1970)
        return try hs256(["sub": user, "iat": issued, "exp": issued + lifetime], secret: secret)
    }

    public static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
