import AppStoreModels
import Crypto
import Foundation
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Headers of chains that validated, by their exact base64url segment. Bounded; starts over
/// when full. Looked up by a hash of the segment's bytes (no copy), then compared byte for byte.
final class HeaderCache: Sendable {
    struct Entry: Sendable {
        var segment: [UInt8]
        var header: CompactJWS.Header
        var leafKey: P256.Signing.PublicKey
        var chainKey: Data
    }

    private let entries = Mutex<[Int: [Entry]]>([:])

    /// The length and the last 64 bytes (the end of the root certificate, which differs between
    /// chains) pick the bucket; the full comparison decides. Hashing all of a 5 KB segment costs
    /// more than the comparison.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes.count)
        hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: bytes[max(0, bytes.count - 64)...]))
        return hasher.finalize()
    }

    func entry(for segment: UnsafeBufferPointer<UInt8>) -> Entry? {
        let key = Self.hash(UnsafeRawBufferPointer(segment))
        return entries.withLock { entries in
            entries[key]?.first { entry in
                entry.segment.count == segment.count
                    && entry.segment.withUnsafeBytes { memcmp($0.baseAddress!, segment.baseAddress!, segment.count) == 0 }
            }
        }
    }

    func insert(_ entry: Entry) {
        let key = entry.segment.withUnsafeBytes { Self.hash($0) }
        entries.withLock { entries in
            if entries.count >= 64 { entries.removeAll(keepingCapacity: true) }
            entries[key, default: []].removeAll { $0.segment == entry.segment }
            entries[key, default: []].append(entry)
        }
    }
}
