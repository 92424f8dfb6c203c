import Crypto
import Foundation

/// Compares secrets in time independent of where they differ: both sides are hashed to a fixed
/// length first, then every byte is compared.
enum KeyComparison {
    static func equal(_ a: String, _ b: String) -> Bool {
        let da = Array(SHA256.hash(data: Data(a.utf8)))
        let db = Array(SHA256.hash(data: Data(b.utf8)))
        var difference: UInt8 = 0
        for i in 0..<da.count { difference |= da[i] ^ db[i] }
        return difference == 0
    }

    /// The bearer token of an `Authorization` header, if well formed.
    static func bearer(_ header: String?) -> String? {
        guard let header, header.count > 7, header.lowercased().hasPrefix("bearer ") else { return nil }
        let token = header.dropFirst(7).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
