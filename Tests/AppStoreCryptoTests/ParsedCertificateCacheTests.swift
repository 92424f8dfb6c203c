import Crypto
import Foundation
import SwiftASN1
import Testing
import X509

@testable import AppStoreCrypto

@Suite("the parsed-certificate cache")
struct ParsedCertificateCacheTests {
    func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    @Test("the last chain is reused only for the same bytes: one byte changed, same length, is digested and parsed again")
    func sameBytesOnly() throws {
        let roots = try ReceiptSignatureVerifier.appleRoots()
        let ders = [try der(roots[0]), try der(roots[1])]
        var altered = ders
        // A byte of the second certificate's signature: it still parses, and is another certificate.
        altered[1][altered[1].count - 10] ^= 0x01
        let cache = ParsedCertificateCache()
        var parses = 0
        func read(_ certificates: [[UInt8]]) throws -> (digest: Data, certificates: [ParsedCertificate]) {
            try cache.certificates(carried: Array(certificates.joined())[...]) {
                parses += 1
                return certificates
            }
        }
        let first = try read(ders)
        #expect(first.digest == Data(SHA256.hash(data: Array(ders.joined()))) && parses == 1)
        let again = try read(ders)
        #expect(again.digest == first.digest && again.certificates.map(\.certificate) == first.certificates.map(\.certificate) && parses == 1)
        let other = try read(altered)
        #expect(other.digest == Data(SHA256.hash(data: Array(altered.joined()))) && other.digest != first.digest && parses == 2)
        #expect(other.certificates[1].certificate != first.certificates[1].certificate)
        // Back to the first: known by its digest, not parsed again.
        #expect(try read(ders).digest == first.digest && parses == 2)
    }
}
