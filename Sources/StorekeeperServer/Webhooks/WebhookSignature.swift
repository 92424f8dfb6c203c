import Crypto
import Foundation

/// Signatures as the Standard Webhooks specification defines them, so any of its libraries
/// verifies ours: HMAC-SHA256 with the secret's key over `id.timestamp.body`, base64, sent as
/// `v1,<signature>`, one per valid secret, space-separated.
enum WebhookSignature {
    static let secretPrefix = "whsec_"

    /// A new secret: 32 random bytes, base64, with the `whsec_` prefix.
    static func newSecret() -> String {
        secretPrefix + Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
    }

    /// The `webhook-signature` header value; secrets that are not `whsec_` + base64 are skipped.
    static func header(id: String, timestamp: Int64, body: [UInt8], secrets: [String]) -> String {
        var signed = Array("\(id).\(timestamp).".utf8)
        signed += body
        return secrets.compactMap { secret -> String? in
            guard secret.hasPrefix(secretPrefix), let key = Data(base64Encoded: String(secret.dropFirst(secretPrefix.count))) else {
                return nil
            }
            let mac = HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: key))
            return "v1," + Data(mac).base64EncodedString()
        }.joined(separator: " ")
    }
}
