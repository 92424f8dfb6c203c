import Crypto
public import Foundation
public import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) public import X509

/// Apple's marker extensions: the WWDR intermediate and the receipt / StoreKit signing leaf.
public enum AppleMarkerOID {
    public static let leaf: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    public static let intermediate: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
}

/// The verdict on a receipt's signature. Invalid is a value listing every failure, not a throw.
public enum ReceiptSignatureVerdict: Sendable, Hashable {
    case valid(signerSubject: String)
    case invalid([Failure])

    public enum Failure: Sendable, Hashable, CustomStringConvertible {
        /// The CMS structure or the signature over the content is wrong (forged, altered, truncated).
        case badSignature(String)
        /// No chain from the signer to a trusted root passes the policies (wrong root, expired,
        /// missing Apple markers…); the reasons are listed.
        case untrustedChain([String])

        public var description: String {
            switch self {
            case .badSignature(let reason): "bad signature: \(reason)"
            case .untrustedChain(let reasons): "untrusted chain: \(reasons.joined(separator: "; "))"
            }
        }
    }

    public var isValid: Bool { if case .valid = self { true } else { false } }
}

/// Checks a receipt's CMS signature and its certificate chain against configured roots only:
/// the roots or intermediates inside the receipt are never trusted by themselves. Validity is
/// checked at the receipt's creation date (Apple's certificates expire; the receipt does not).
public struct ReceiptSignatureVerifier: Sendable {
    public let roots: [Certificate]
    /// Require Apple's marker extensions on leaf and intermediate (off only for Xcode's
    /// single-certificate StoreKit test receipts).
    public let requireAppleMarkers: Bool
    /// Chains validated before under these roots and policies; nil validates every chain in full.
    public let chainCache: VerifiedChainCache?
    /// Certificates already parsed, by the digest of the carried DER: every receipt of an app
    /// carries the same few, and parsing them costs more than checking the signature.
    private let parsed = ParsedCertificateCache()

    public init(roots: [Certificate], requireAppleMarkers: Bool = true, chainCache: VerifiedChainCache? = VerifiedChainCache()) {
        self.roots = roots
        self.requireAppleMarkers = requireAppleMarkers
        self.chainCache = chainCache
    }

    /// Apple's published roots.
    public static func appleRoots() throws -> [Certificate] {
        try AppleRootCertificates.all.map { try certificate(base64DER: $0) }
    }

    public static func certificate(base64DER: String) throws -> Certificate {
        guard let data = Data(base64Encoded: base64DER, options: .ignoreUnknownCharacters) else {
            throw AppReceiptError(.malformedEncoding, "certificate is not base64")
        }
        return try Certificate(derEncoded: Array(data))
    }

    public func verify(_ bytes: [UInt8], at validationTime: Date) async -> ReceiptSignatureVerdict {
        let structure: SignedDataStructure
        do {
            structure = try SignedDataStructure(bytes) { carried, each in try parsed.certificates(carried: carried, each: each) }
        } catch {
            return .invalid([.badSignature("malformed SignedData: \(error)")])
        }
        guard
            let signerIndex = structure.certificates.firstIndex(where: {
                Self.sameInteger($0.certificate.serialNumber.bytes, structure.signerSerial) && $0.issuerDER == structure.signerIssuerDER
            })
        else { return .invalid([.badSignature("the signer's certificate is not in the receipt")]) }
        let signer = structure.certificates[signerIndex].certificate
        let signerSubject = structure.certificates[signerIndex].subject

        var failures: [ReceiptSignatureVerdict.Failure] = []
        guard let digest = Self.digest(structure.content, algorithm: structure.digestAlgorithm),
            let algorithm = Self.signatureAlgorithm(structure.signatureAlgorithm, digest: structure.digestAlgorithm)
        else { return .invalid([.badSignature("unsupported algorithm \(structure.signatureAlgorithm)")]) }
        let signedBytes: [UInt8]
        if let attributes = structure.signedAttributes {
            if structure.messageDigest != digest { failures.append(.badSignature("content does not match the signed digest")) }
            signedBytes = attributes
        } else {
            signedBytes = structure.content
        }
        if !signer.publicKey.isValidSignature(structure.signature, for: signedBytes, signatureAlgorithm: algorithm) {
            failures.append(.badSignature("the signature does not verify with the signer's key"))
        }

        // Xcode's StoreKit test receipts are signed by a single self-signed certificate: when that
        // exact certificate is configured as trusted (and Apple's markers are not required), it
        // stands for itself, within its validity period.
        if !requireAppleMarkers, roots.contains(signer) {
            if validationTime < signer.notValidBefore || validationTime > signer.notValidAfter {
                failures.append(.untrustedChain(["the trusted signing certificate is not valid at \(validationTime)"]))
            }
            return failures.isEmpty ? .valid(signerSubject: signerSubject) : .invalid(failures)
        }
        let others = structure.certificates.map(\.certificate).filter { $0 != signer }
        let cacheKey = chainCache.map { _ in
            VerifiedChainCache.key(signerIndex: signerIndex, certificatesDigest: structure.certificatesDigest)
        }
        if let chainCache, let cacheKey, chainCache.contains(cacheKey, at: validationTime) {
            return failures.isEmpty ? .valid(signerSubject: signerSubject) : .invalid(failures)
        }
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: validationTime)
            AppleMarkerPolicy(required: requireAppleMarkers)
        }
        switch await verifier.validate(leaf: signer, intermediates: CertificateStore(others)) {
        case .validCertificate(let path):
            if let chainCache, let cacheKey { chainCache.insert(cacheKey, validatedPath: Array(path)) }
        case .couldNotValidate(let policyFailures):
            let reasons = policyFailures.map { String(describing: $0.policyFailureReason) }
            failures.append(.untrustedChain(reasons.isEmpty ? ["no chain to a trusted root"] : reasons))
        }
        return failures.isEmpty ? .valid(signerSubject: signerSubject) : .invalid(failures)
    }

    /// INTEGER contents compared as numbers: a leading 0x00 (sign padding) does not count.
    static func sameInteger(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        a.drop { $0 == 0 }.elementsEqual(b.drop { $0 == 0 })
    }

    static let sha1: ASN1ObjectIdentifier = [1, 3, 14, 3, 2, 26]
    static let sha256: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 1]
    static let sha384: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 2, 2]
    static let rsaEncryption: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]

    static func digest(_ bytes: [UInt8], algorithm: ASN1ObjectIdentifier) -> [UInt8]? {
        switch algorithm {
        case sha1: Array(Insecure.SHA1.hash(data: bytes))
        case sha256: Array(SHA256.hash(data: bytes))
        case sha384: Array(SHA384.hash(data: bytes))
        default: nil
        }
    }

    /// Apple signs with `rsaEncryption` and names the hash in the digest algorithm.
    static func signatureAlgorithm(_ oid: ASN1ObjectIdentifier, digest: ASN1ObjectIdentifier) -> Certificate.SignatureAlgorithm? {
        if oid == rsaEncryption {
            switch digest {
            case sha1: return .sha1WithRSAEncryption
            case sha256: return .sha256WithRSAEncryption
            case sha384: return .sha384WithRSAEncryption
            default: return nil
            }
        }
        let known: [(ASN1ObjectIdentifier, Certificate.SignatureAlgorithm)] = [
            ([1, 2, 840, 113549, 1, 1, 5], .sha1WithRSAEncryption), ([1, 2, 840, 113549, 1, 1, 11], .sha256WithRSAEncryption),
            ([1, 2, 840, 113549, 1, 1, 12], .sha384WithRSAEncryption), ([1, 2, 840, 10045, 4, 3, 2], .ecdsaWithSHA256),
            ([1, 2, 840, 10045, 4, 3, 3], .ecdsaWithSHA384),
        ]
        return known.first { $0.0 == oid }?.1
    }
}

/// Leaf must carry 1.2.840.113635.100.6.11.1 and the certificate above it 1.2.840.113635.100.6.2.1.
struct AppleMarkerPolicy: VerifierPolicy {
    let required: Bool
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        guard required else { return .meetsPolicy }
        let certificates = Array(chain)
        guard certificates.count >= 3 else {
            return .failsToMeetPolicy(reason: "chain of \(certificates.count) certificates; Apple's has leaf, intermediate, root")
        }
        if certificates[0].extensions[oid: AppleMarkerOID.leaf] == nil {
            return .failsToMeetPolicy(reason: "leaf lacks Apple's marker 1.2.840.113635.100.6.11.1")
        }
        if certificates[1].extensions[oid: AppleMarkerOID.intermediate] == nil {
            return .failsToMeetPolicy(reason: "intermediate lacks Apple's marker 1.2.840.113635.100.6.2.1")
        }
        return .meetsPolicy
    }
}

/// Parsed certificates by the digest of a receipt's carried DER. Bounded; starts over when full.
final class ParsedCertificateCache: Sendable {
    private let entries = Mutex<[Data: [ParsedCertificate]]>([:])
    /// The last chain seen, by its bytes: an app's receipts all carry the same one, and comparing
    /// a few kilobytes costs a fraction of hashing them (docs/BENCHMARKS.md, "App receipts").
    private let last = Mutex<(carried: [UInt8], digest: Data, parsed: [ParsedCertificate])?>(nil)

    func certificates(carried: ArraySlice<UInt8>, each: () -> [[UInt8]]) throws -> (digest: Data, certificates: [ParsedCertificate]) {
        let hit: (Data, [ParsedCertificate])? = last.withLock { last in
            guard let last, !carried.isEmpty, last.carried.count == carried.count else { return nil }
            let same = last.carried.withUnsafeBytes { a in carried.withUnsafeBytes { b in memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0 } }
            return same ? (last.digest, last.parsed) : nil
        }
        if let hit { return hit }
        let digest = Data(SHA256.hash(data: carried))
        let parsed: [ParsedCertificate]
        if let known = entries.withLock({ $0[digest] }) {
            parsed = known
        } else {
            parsed = try each().map { try ParsedCertificate(der: $0) }
            entries.withLock { entries in
                if entries.count >= 64 { entries.removeAll(keepingCapacity: true) }
                entries[digest] = parsed
            }
        }
        last.withLock { $0 = (Array(carried), digest, parsed) }
        return (digest, parsed)
    }
}
