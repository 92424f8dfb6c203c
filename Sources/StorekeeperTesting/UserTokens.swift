import Crypto
import Foundation

/// User tokens as an app's backend mints them, built here from RFC 7515 and RFC 7519 (HS256)
/// rather than with the library the server checks them with.
public enum UserTokens {
    public static func hs256(_ claims: [String: Any], secret: String) throws -> String {
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let payload = base64URL(try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys]))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(payload)".utf8), using: SymmetricKey(data: Data(secret.utf8)))
        return "\(header).\(payload).\(base64URL(Data(mac)))"
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
