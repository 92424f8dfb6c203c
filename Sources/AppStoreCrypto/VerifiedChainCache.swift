import Crypto
import Foundation
import Synchronization
import X509

/// Chains that already passed full validation, by the exact certificates a receipt carried,
/// with the period in which every certificate of the validated path is valid. A steady stream
/// of receipts signed by the same Apple leaf then costs one signature check each instead of a
/// path build plus two or three more signature checks. Only a success is remembered: a chain
/// that failed is validated again each time, so nothing wrong is ever cached as right.
public final class VerifiedChainCache: Sendable {
    struct Entry: Sendable {
        var notBefore: Date
        var notAfter: Date
    }

    private let entries = Mutex<[Data: Entry]>([:])
    private let hitCount = Mutex(0)
    /// Distinct chains remembered before the cache starts over (Apple rotates leaves rarely).
    let capacity: Int

    public init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// The key: which certificate signed, and the digest of every certificate the receipt carried.
    static func key(signerIndex: Int, certificatesDigest: Data) -> Data {
        var key = Data(certificatesDigest)
        withUnsafeBytes(of: Int32(signerIndex).bigEndian) { key.append(contentsOf: $0) }
        return key
    }

    func contains(_ key: Data, at time: Date) -> Bool {
        guard let entry = entries.withLock({ $0[key] }), entry.notBefore <= time, time <= entry.notAfter else { return false }
        hitCount.withLock { $0 += 1 }
        return true
    }

    func insert(_ key: Data, validatedPath: [Certificate], until limit: Date? = nil) {
        guard let notBefore = validatedPath.map(\.notValidBefore).max(), var notAfter = validatedPath.map(\.notValidAfter).min()
        else { return }
        if let limit { notAfter = min(notAfter, limit) }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = Entry(notBefore: notBefore, notAfter: notAfter)
        }
    }

    /// Validations answered from the cache so far.
    public var hits: Int { hitCount.withLock { $0 } }

    /// Chains remembered now.
    public var count: Int { entries.withLock { $0.count } }
}
