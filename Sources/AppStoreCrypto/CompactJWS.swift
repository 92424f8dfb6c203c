import AppStoreModels
import Crypto
import Foundation
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// Why a compact JWS could not even be read. Anything readable gets a verdict instead.
public struct SignedDataError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public static let malformed = Code("malformed_jws")
        public static let tooLarge = Code("jws_too_large")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

/// A compact JWS split into its parts, nothing checked yet. Hostile input is bounded: overall
/// size, header size and the number of certificates.
public struct CompactJWS: Sendable {
    public struct Header: Decodable, Hashable, Sendable {
        public var alg: String?
        public var typ: String?
        public var kid: String?
        public var x5c: [String]?
    }

    public static let maximumLength = 256 * 1024
    public static let maximumCertificates = 5

    public var header: Header
    public var payload: [UInt8]
    public var signature: [UInt8]
    /// `base64url(header) "." base64url(payload)`: the bytes the signature covers.
    public var signingInput: [UInt8]
    private var headerLength: Int

    /// The header segment exactly as sent (base64url): identical for every item signed by
    /// the same certificates, so it keys the verifier's header cache.
    public var headerSegment: ArraySlice<UInt8> { signingInput[..<headerLength] }

    public init(_ text: String) throws {
        try self.init(text, knownHeader: { _ in nil })
    }

    /// `knownHeader` answers the decoded header when this header segment was seen before, so
    /// a steady stream skips decoding it. Works on the string's contiguous UTF-8 bytes: a JWS
    /// is ASCII, and Character-level (or even UTF8View-indexed) work costs more than the
    /// signature check.
    init(_ text: String, knownHeader: (UnsafeBufferPointer<UInt8>) -> Header?) throws {
        var text = text
        let parts = try text.withUTF8 { bytes throws -> (Header, [UInt8], [UInt8], [UInt8], Int) in
            guard bytes.count <= Self.maximumLength else {
                throw SignedDataError(.tooLarge, "\(bytes.count) bytes; at most \(Self.maximumLength)")
            }
            let dot = UInt8(ascii: ".")
            guard let first = bytes.firstIndex(of: dot), let second = bytes[(first + 1)...].firstIndex(of: dot),
                !bytes[(second + 1)...].contains(dot)
            else { throw SignedDataError(.malformed, "a compact JWS has 3 parts separated by dots") }
            let headerPart = UnsafeBufferPointer(rebasing: bytes[..<first])
            guard let payload = Self.base64URL(UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second])),
                let signature = Self.base64URL(UnsafeBufferPointer(rebasing: bytes[(second + 1)...]))
            else { throw SignedDataError(.malformed, "a part is not base64url") }
            let header: Header
            if let known = knownHeader(headerPart) {
                header = known
            } else {
                guard let headerBytes = Self.base64URL(headerPart) else { throw SignedDataError(.malformed, "a part is not base64url") }
                do {
                    header = try JSONDecoder().decode(Header.self, from: Data(headerBytes))
                } catch {
                    throw SignedDataError(.malformed, "the header is not a JSON object with string fields")
                }
            }
            return (header, payload, signature, Array(UnsafeBufferPointer(rebasing: bytes[..<second])), first)
        }
        if (parts.0.x5c?.count ?? 0) > Self.maximumCertificates {
            throw SignedDataError(.malformed, "more than \(Self.maximumCertificates) certificates in x5c")
        }
        (header, payload, signature, signingInput, headerLength) = parts
    }

    /// RFC 7515 base64url without padding (trailing padding tolerated), decoded byte by byte.
    static func base64URL<Bytes: Collection>(_ part: Bytes) -> [UInt8]? where Bytes.Element == UInt8 {
        // At most two trailing '=' may be dropped; an '=' elsewhere fails the table lookup below.
        var count = part.count
        var end = part.endIndex
        for _ in 0..<2 where count > 0 {
            let last = part.index(part.startIndex, offsetBy: count - 1)
            guard part[last] == UInt8(ascii: "=") else { break }
            count -= 1
            end = last
        }
        let trimmed = part[..<end]
        if trimmed.count % 4 == 1 { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(trimmed.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        let valid = decodeTable.withUnsafeBufferPointer { table in
            for byte in trimmed {
                let value = table[Int(byte)]
                if value == 0xFF { return false }
                accumulator = (accumulator << 6) | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                }
            }
            return true
        }
        return valid ? output : nil
    }

    /// base64url alphabet → 6-bit value; 0xFF for every other byte.
    static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()
}
