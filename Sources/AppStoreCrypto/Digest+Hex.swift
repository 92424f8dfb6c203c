import Crypto
public import Foundation

/// The one place bytes become lowercase hex: content hashes (receipts, JWSs, notification
/// bodies), request digests in signed answers and configuration fingerprints all read alike.
extension Sequence where Element == UInt8 {
    /// Two lowercase hex digits per byte.
    public var lowercaseHex: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(underestimatedCount * 2)
        for byte in self {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// SHA-256 of some bytes as lowercase hex: how every content hash in the store is written.
public func sha256Hex(_ bytes: some DataProtocol) -> String {
    SHA256.hash(data: bytes).lowercaseHex
}
