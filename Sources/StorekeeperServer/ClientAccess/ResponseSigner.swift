import AppStoreCrypto
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StorekeeperErrors
import StorekeeperWire

/// Signs what a client route answers, so an app can tell Storekeeper's answer from one forged
/// or replayed on the way (a proxy that says "you own everything"). The app sends a fresh
/// random `Storekeeper-Nonce`; the answer carries `Storekeeper-Signature`, an ES256 signature
/// by the app's configured key over the nonce, the request, the status, the time and the body.
/// docs/CLIENTS.md gives the format; the app pins the public keys.
struct ResponseSigner: Sendable {
    static let nonceHeader = HTTPField.Name("Storekeeper-Nonce")!
    static let signatureHeader = HTTPField.Name("Storekeeper-Signature")!

    let keyId: String
    let key: P256.Signing.PrivateKey

    init(_ configuration: ResponseSigningKey) throws {
        keyId = configuration.id
        key = try P256.Signing.PrivateKey(pemRepresentation: configuration.privateKeyPEM)
    }

    /// A nonce as the format allows: 16-128 characters of base64url or hex.
    static func nonce(_ request: Request) throws -> String? {
        guard let nonce = request.headers[nonceHeader] else { return nil }
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        guard (16...128).contains(nonce.utf8.count), nonce.utf8.allSatisfy(allowed.contains) else {
            throw StorekeeperError(.invalidRequest, "Storekeeper-Nonce must be 16-128 characters of base64url")
        }
        return nonce
    }

    /// The bytes signed: `storekeeper-response-v2`, the nonce, `METHOD path?query`, the hex
    /// SHA-256 of the request body (of no bytes for a request without one), the status code,
    /// the Unix time in seconds and the key id, each followed by a line feed, then the body
    /// exactly as sent. The request's digest ties the answer to what was posted: an answer to an
    /// earlier post cannot be passed off as the answer to another.
    static func message(
        nonce: String, method: String, target: String, requestDigest: String, status: Int, timestamp: Int64, keyId: String,
        body: [UInt8]
    ) -> [UInt8] {
        Array("storekeeper-response-v2\n\(nonce)\n\(method) \(target)\n\(requestDigest)\n\(status)\n\(timestamp)\n\(keyId)\n".utf8) + body
    }

    static func digest(_ requestBody: ByteBuffer?) -> String {
        let bytes = requestBody.map { Array($0.readableBytesView) } ?? []
        return sha256Hex(bytes)
    }

    /// `v2,kid=<id>,ts=<seconds>,sig=<base64 of the 64-byte r‖s signature>`.
    func header(nonce: String, request: Request, requestBody: ByteBuffer?, status: Int, body: [UInt8], now: Date) throws -> String {
        let timestamp = Int64(now.timeIntervalSince1970.rounded(.down))
        let message = Self.message(
            nonce: nonce, method: request.method.rawValue, target: request.uri.description, requestDigest: Self.digest(requestBody),
            status: status, timestamp: timestamp, keyId: keyId, body: body)
        let signature = try key.signature(for: message).rawRepresentation.base64EncodedString()
        return "v2,kid=\(keyId),ts=\(timestamp),sig=\(signature)"
    }
}

/// One key that signs client answers. The first configured key signs; list the next one second
/// while apps learn it, then move it first.
public struct ResponseSigningKey: Codable, Sendable, Hashable {
    /// Named in each signature (`kid`), so an app knows which pinned key to check with.
    public var id: String
    /// PEM P-256 private key.
    public var privateKeyPEM: String

    public init(id: String, privateKeyPEM: String) {
        self.id = id
        self.privateKeyPEM = privateKeyPEM
    }
}
