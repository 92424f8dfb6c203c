import AppStoreModels
import Crypto
public import Foundation
public import StorekeeperWire
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) import X509

/// The verdict on one piece of Apple's signed data: every failure found, and the payload bytes
/// (to decode into a transaction, renewal info, notification or app transaction).
public struct SignedDataVerdict: Sendable {
    public enum Failure: Hashable, Sendable, CustomStringConvertible {
        /// Only ES256 is Apple's; `none`, HS256 and everything else are refused.
        case unsupportedAlgorithm(String)
        /// No `x5c` chain, or not leaf + intermediate + root.
        case missingCertificateChain(String)
        case badSignature(String)
        case untrustedChain([String])
        case wrongBundleId(expected: String, found: String?)
        case wrongEnvironment(expected: String, found: String?)
        case wrongAppAppleId(expected: Int64, found: Int64?)

        /// A stable code for APIs and logs.
        public var code: String {
            switch self {
            case .unsupportedAlgorithm: "jws_unsupported_algorithm"
            case .missingCertificateChain: "jws_missing_certificate_chain"
            case .badSignature: "jws_signature_invalid"
            case .untrustedChain: "jws_chain_untrusted"
            case .wrongBundleId: "jws_wrong_bundle_id"
            case .wrongEnvironment: "jws_wrong_environment"
            case .wrongAppAppleId: "jws_wrong_app_apple_id"
            }
        }

        public var description: String {
            switch self {
            case .unsupportedAlgorithm(let alg): "algorithm '\(alg)' is not ES256"
            case .missingCertificateChain(let why): "certificate chain: \(why)"
            case .badSignature(let why): "bad signature: \(why)"
            case .untrustedChain(let reasons): "untrusted chain: \(reasons.joined(separator: "; "))"
            case .wrongBundleId(let expected, let found): "bundle id \(found ?? "(none)"), expected \(expected)"
            case .wrongEnvironment(let expected, let found): "environment \(found ?? "(none)"), expected \(expected)"
            case .wrongAppAppleId(let expected, let found): "app Apple id \(found.map(String.init) ?? "(none)"), expected \(expected)"
            }
        }
    }

    public var header: CompactJWS.Header
    public var payload: [UInt8]
    /// `signedDate` of the payload, when it has one.
    public var signedDate: Date?
    /// The instant the chain was validated at.
    public var validationTime: Date
    public var failures: [Failure]

    public var isValid: Bool { failures.isEmpty }

    /// The payload as read by the verifier (nil when it is not JSON).
    public var json: JSONValue?

    /// The payload decoded as `T` from the value the verifier already read.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        guard let json else { return try JSONDecoder().decode(T.self, from: Data(payload)) }
        return try json.decode(T.self)
    }
}
