import Crypto
public import Foundation
public import SwiftASN1
public import X509

/// The simulator's own certificate authority: root → intermediate → leaf, shaped like Apple's
/// (the intermediate and leaf carry Apple's marker extensions), generated fresh at start.
/// Its root is what a server trusts when it verifies the simulator's receipts locally.
public struct SimulatorPKI: Sendable {
    /// Apple's marker on the certificate that signs receipts and StoreKit data.
    public static let leafMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    /// Apple's marker on the Worldwide Developer Relations intermediate.
    public static let intermediateMarkerOID: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    /// Where the intermediate and the leaf say their revocation status is served (Authority
    /// Information Access). A name that resolves nowhere: servers that check revocation against
    /// the simulator point their OCSP requests at its `/ocsp` (`responderOverride`).
    public static let ocspURL = "http://ocsp.storekeeper-simulator.invalid/ocsp"

    public let root: Certificate
    public let intermediate: Certificate
    public let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey
    let intermediateKey: P256.Signing.PrivateKey
    let rootKey: P256.Signing.PrivateKey

    /// `leafMarker` / `intermediateMarker` off make a chain a verifier must refuse (tests).
    public init(now: Date = Date(), leafMarker: Bool = true, intermediateMarker: Bool = true) throws {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        let leafKey = P256.Signing.PrivateKey()
        let notBefore = now.addingTimeInterval(-86_400)
        let rootName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Storekeeper Simulator")
            CommonName("Storekeeper Simulator Root CA")
        }
        let intermediateName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Storekeeper Simulator")
            CommonName("Storekeeper Simulator Worldwide Developer Relations CA")
        }
        let leafName = try DistinguishedName {
            CountryName("US")
            OrganizationName("Storekeeper Simulator")
            CommonName("Storekeeper Simulator Receipt and StoreKit Signing")
        }
        // Key identifiers as RFC 5280 §4.2.1.1-2 asks of a conforming CA (SHA-1 of the key):
        // OpenSSL's strict mode, which Apple's own verifier library turns on, refuses a chain
        // without them.
        let rootKeyId = SubjectKeyIdentifier(hash: .init(rootKey.publicKey))
        let intermediateKeyId = SubjectKeyIdentifier(hash: .init(intermediateKey.publicKey))
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: notBefore,
            notValidAfter: now.addingTimeInterval(20 * 365 * 86_400), issuer: rootName, subject: rootName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                rootKeyId
            },
            issuerPrivateKey: .init(rootKey))
        var intermediateExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
            Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            intermediateKeyId
            AuthorityKeyIdentifier(keyIdentifier: rootKeyId.keyIdentifier)
        }
        let ocsp = AuthorityInformationAccess([.init(method: .ocspServer, location: .uniformResourceIdentifier(Self.ocspURL))])
        try intermediateExtensions.append(Certificate.Extension(ocsp, critical: false))
        if intermediateMarker {
            try intermediateExtensions.append(
                Certificate.Extension(oid: Self.intermediateMarkerOID, critical: false, value: [0x05, 0x00]))
        }
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: notBefore,
            notValidAfter: now.addingTimeInterval(10 * 365 * 86_400), issuer: rootName, subject: intermediateName,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: intermediateExtensions, issuerPrivateKey: .init(rootKey))
        var leafExtensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            SubjectKeyIdentifier(hash: .init(leafKey.publicKey))
            AuthorityKeyIdentifier(keyIdentifier: intermediateKeyId.keyIdentifier)
        }
        try leafExtensions.append(Certificate.Extension(ocsp, critical: false))
        if leafMarker {
            try leafExtensions.append(Certificate.Extension(oid: Self.leafMarkerOID, critical: false, value: [0x05, 0x00]))
        }
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: notBefore,
            notValidAfter: now.addingTimeInterval(2 * 365 * 86_400), issuer: intermediateName, subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: leafExtensions, issuerPrivateKey: .init(intermediateKey))
        self.leafKey = leafKey
        self.intermediateKey = intermediateKey
        self.rootKey = rootKey
    }

    /// The root in PEM, for servers that verify the simulator's receipts locally.
    public func rootPEM() throws -> String {
        try root.serializeAsPEM().pemString
    }

    /// Signs `payload` (a JSON object) the way the App Store signs StoreKit 2 data: compact JWS,
    /// ES256 with the leaf key, `x5c` = leaf, intermediate, root. `alg` other than ES256 is
    /// written into the header as given (for forgeries in tests); the signature stays ES256.
    /// `chain` replaces the `x5c` list (tests of chain shapes); the leaf key still signs.
    public func signJWS(payload: [UInt8], alg: String = "ES256", chain: [Certificate]? = nil) throws -> String {
        func der(_ certificate: Certificate) throws -> String {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            return Data(serializer.serializedBytes).base64EncodedString()
        }
        struct Header: Encodable {
            var alg: String
            var x5c: [String]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let header = try encoder.encode(Header(alg: alg, x5c: try (chain ?? [leaf, intermediate, root]).map(der)))
        let input = Self.base64URL(Array(header)) + "." + Self.base64URL(payload)
        let signature = try leafKey.signature(for: Array(input.utf8))
        return input + "." + Self.base64URL(Array(signature.rawRepresentation))
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
