import Crypto
import CryptoExtras
import Foundation

/// An operator's password as stored in configuration: scrypt (memory-hard, swift-crypto's
/// `KDF.Scrypt`) with a random salt, `scrypt$<log2 N>$<r>$<p>$<salt>$<hash>` in base64. The
/// parameters travel with the hash so they can be raised later without breaking older entries.
struct OperatorPassword: Sendable, Hashable {
    var logN: Int
    var blockSize: Int
    var parallelism: Int
    var salt: Data
    var hash: Data

    /// 2^15 × 8 × 128 bytes: 32 MiB and some tens of milliseconds per attempt.
    static let defaultLogN = 15

    init?(encoded: String) {
        let parts = encoded.split(separator: "$", omittingEmptySubsequences: false)
        // Bounds keep a hostile configuration entry from asking for gigabytes.
        guard parts.count == 6, parts[0] == "scrypt", let logN = Int(parts[1]), (10...20).contains(logN), let r = Int(parts[2]),
            (1...16).contains(r), let p = Int(parts[3]), (1...4).contains(p), let salt = Data(base64Encoded: String(parts[4])),
            salt.count >= 16, let hash = Data(base64Encoded: String(parts[5])), hash.count == 32
        else { return nil }
        (self.logN, blockSize, parallelism, self.salt, self.hash) = (logN, r, p, salt, hash)
    }

    /// A new hash of `password` with a fresh salt.
    static func make(_ password: String, logN: Int = defaultLogN) throws -> String {
        let salt = Data((0..<16).map { _ in UInt8.random(in: 0...255) })
        let hash = try derive(password, salt: salt, logN: logN, blockSize: 8, parallelism: 1)
        return "scrypt$\(logN)$8$1$\(salt.base64EncodedString())$\(hash.base64EncodedString())"
    }

    /// Whether `password` is this one, compared in constant time.
    func matches(_ password: String) -> Bool {
        guard let derived = try? Self.derive(password, salt: salt, logN: logN, blockSize: blockSize, parallelism: parallelism) else {
            return false
        }
        return derived.count == hash.count && KeyComparison.equal(derived.base64EncodedString(), hash.base64EncodedString())
    }

    static func derive(_ password: String, salt: Data, logN: Int, blockSize: Int, parallelism: Int) throws -> Data {
        let key = try KDF.Scrypt.deriveKey(
            from: Data(password.utf8), salt: salt, outputByteCount: 32, rounds: 1 << logN, blockSize: blockSize, parallelism: parallelism)
        return key.withUnsafeBytes { Data($0) }
    }
}
