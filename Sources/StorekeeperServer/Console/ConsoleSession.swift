import Crypto
import Foundation
import StorekeeperDomain

/// A signed-in operator, carried in an HttpOnly cookie signed with a key derived from the admin
/// key: any process of the deployment reads it without a database; changing the admin key signs
/// everyone out. The nonce names the session (sign-out revokes it) and keys its CSRF token.
struct ConsoleSession: Codable, Sendable, Hashable {
    var name: String
    var role: ConsoleRole
    /// UNIX milliseconds.
    var expires: Int64
    var nonce: String

    static let cookieName = "storekeeper_console"
}

/// Signs and reads session cookies and derives CSRF tokens (HMAC-SHA256).
struct ConsoleSessionSigner: Sendable {
    private let key: SymmetricKey

    init(adminKey: String) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: Data(adminKey.utf8)), info: Data("storekeeper console session v1".utf8), outputByteCount: 32)
    }

    func cookieValue(_ session: ConsoleSession) throws -> String {
        let payload = Self.base64URL(try JSONEncoder().encode(session))
        return payload + "." + Self.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data(payload.utf8), using: key)))
    }

    /// The session a cookie carries, if its signature holds and it has not expired at `now`.
    func session(from value: String, now: Date) -> ConsoleSession? {
        // A cookie is small; anything larger is not ours.
        guard value.utf8.count <= 1_024 else { return nil }
        let parts = value.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let mac = Self.data(base64URL: String(parts[1])),
            HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Data(parts[0].utf8), using: key),
            let json = Self.data(base64URL: String(parts[0])), let session = try? JSONDecoder().decode(ConsoleSession.self, from: json),
            Int64((now.timeIntervalSince1970 * 1000).rounded(.down)) < session.expires
        else { return nil }
        return session
    }

    /// The token every form of this session carries: bound to the session, useless to another.
    func csrfToken(for nonce: String) -> String {
        Self.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data("csrf:\(nonce)".utf8), using: key)))
    }

    /// What makes a notice shown after a redirect (`?notice=…&ns=…`) this console's own words to
    /// this session: a page shows a notice only with it, so a crafted link cannot put text of an
    /// attacker's choosing on an operator's page.
    func noticeSeal(_ notice: String, nonce: String) -> String {
        Self.base64URL(Data(HMAC<SHA256>.authenticationCode(for: Data("notice:\(nonce):\(notice)".utf8), using: key)))
    }

    /// Compares a posted token with the session's in constant time.
    func csrfMatches(_ token: String?, nonce: String) -> Bool {
        guard let token else { return false }
        return KeyComparison.equal(token, csrfToken(for: nonce))
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func data(base64URL text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }

    static func randomNonce() -> String {
        base64URL(Data((0..<18).map { _ in UInt8.random(in: 0...255) }))
    }
}
