import Crypto
import Foundation
import SwiftASN1
import X509

/// The parts of a CMS SignedData (RFC 5652 §5) that a signature check needs, read from BER:
///
/// ```
/// SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo,
///     certificates [0] IMPLICIT CertificateSet OPTIONAL, crls [1] OPTIONAL, signerInfos SET OF SignerInfo }
/// SignerInfo ::= SEQUENCE { version, sid IssuerAndSerialNumber, digestAlgorithm,
///     signedAttrs [0] IMPLICIT SET OF Attribute OPTIONAL, signatureAlgorithm, signature OCTET STRING, … }
/// ```
/// Written here rather than taken from swift-certificates' CMS SPI, which refuses the BER
/// constructed OCTET STRINGs that Apple's and Xcode's receipts contain.
struct SignedDataStructure {
    var content: [UInt8]
    var certificates: [ParsedCertificate]
    /// SHA-256 over the certificates' DER as carried: the receipt's chain identity, for the cache.
    var certificatesDigest: Data
    /// DER of the signer's issuer name, compared byte for byte with each certificate's issuer.
    var signerIssuerDER: [UInt8]
    var signerSerial: ArraySlice<UInt8>
    var digestAlgorithm: ASN1ObjectIdentifier
    /// The signed attributes re-encoded as `SET OF` (what the signature covers), if present.
    var signedAttributes: [UInt8]?
    var messageDigest: [UInt8]?
    var signatureAlgorithm: ASN1ObjectIdentifier
    var signature: [UInt8]

    static let messageDigestOIDBytes: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x09, 0x04]

    /// `certificates` turns the carried certificates (their DER one after another, and each
    /// one's on demand) into the digest of them all and parsed certificates; the verifier answers
    /// from its cache when the same chain was seen before.
    init(
        _ bytes: [UInt8],
        certificates parse: (_ carried: ArraySlice<UInt8>, _ each: () -> [[UInt8]]) throws -> (digest: Data, certificates: [ParsedCertificate])
    ) throws {
        let reader = BERReader(bytes)
        let contentInfo = try reader.children(of: try reader.element(at: 0), tag: BERElement.sequence)
        guard contentInfo.count >= 2 else { throw AppReceiptError(.notSignedData, "ContentInfo too short") }
        guard let signedDataNode = try reader.children(of: contentInfo[1], tag: BERElement.context0).first else {
            throw AppReceiptError(.notSignedData, "empty")
        }
        let fields = try reader.children(of: signedDataNode, tag: BERElement.sequence)
        guard fields.count >= 4 else { throw AppReceiptError(.notSignedData, "SignedData too short") }
        let encap = try reader.children(of: fields[2], tag: BERElement.sequence)
        guard encap.count == 2, let octets = try reader.children(of: encap[1], tag: BERElement.context0).first,
            octets.tag == BERElement.octetString
        else { throw AppReceiptError(.missingContent, "no attached content") }
        content = Array(try reader.stringBytes(octets))

        // The certificates as carried, one after another: what their digest covers.
        var nodes: [Range<Int>] = []
        var regions: [Range<Int>] = []
        var signerInfos: BERElement?
        for field in fields.dropFirst(3) {
            if field.tag == BERElement.context0, field.isConstructed {
                for node in try reader.children(of: field) { nodes.append(node.start..<node.end) }
                regions.append(field.contents)
            } else if field.tag == BERElement.set {
                signerInfos = field
            }
        }
        let carried = regions.count == 1 ? bytes[regions[0]] : regions.flatMap { bytes[$0] }[...]
        (certificatesDigest, certificates) = try parse(carried) { nodes.map { Array(bytes[$0]) } }
        guard let signerInfos else { throw AppReceiptError(.notSignedData, "expected exactly one signer") }
        let signers = try reader.children(of: signerInfos, tag: BERElement.set)
        guard signers.count == 1 else { throw AppReceiptError(.notSignedData, "expected exactly one signer") }

        let info = try reader.children(of: signers[0], tag: BERElement.sequence)
        guard info.count >= 5 else { throw AppReceiptError(.notSignedData, "SignerInfo too short") }
        let sid = try reader.children(of: info[1], tag: BERElement.sequence)
        guard sid.count == 2, sid[1].tag == BERElement.integer, !sid[1].isConstructed else {
            throw AppReceiptError(.notSignedData, "signer is not identified by issuer and serial")
        }
        signerIssuerDER = Array(bytes[sid[0].start..<sid[0].end])
        signerSerial = bytes[sid[1].contents]
        digestAlgorithm = try Self.algorithm(info[2], reader)
        var index = 3
        if info[index].tag == BERElement.context0 {
            var body: [UInt8] = []
            for attribute in try reader.children(of: info[index]) {
                body += bytes[attribute.start..<attribute.end]
                let parts = try reader.children(of: attribute, tag: BERElement.sequence)
                if parts.count == 2, parts[0].tag == BERElement.objectIdentifier,
                    bytes[parts[0].contents].elementsEqual(Self.messageDigestOIDBytes),
                    let value = try reader.children(of: parts[1], tag: BERElement.set).first, value.tag == BERElement.octetString
                {
                    messageDigest = Array(try reader.stringBytes(value))
                }
            }
            // The signature covers the attributes as a DER `SET OF`, not as the [0] field.
            var serializer = DER.Serializer()
            serializer.appendConstructedNode(identifier: .set) { $0.serializeRawBytes(body) }
            signedAttributes = serializer.serializedBytes
            index += 1
        }
        guard info.count > index + 1, info[index + 1].tag == BERElement.octetString else {
            throw AppReceiptError(.notSignedData, "SignerInfo lacks signature")
        }
        signatureAlgorithm = try Self.algorithm(info[index], reader)
        signature = Array(try reader.stringBytes(info[index + 1]))
    }

    static func algorithm(_ element: BERElement, _ reader: BERReader) throws -> ASN1ObjectIdentifier {
        guard let oid = try reader.children(of: element, tag: BERElement.sequence).first, oid.tag == BERElement.objectIdentifier else {
            throw AppReceiptError(.notSignedData, "empty algorithm identifier")
        }
        return try ASN1ObjectIdentifier(derEncoded: Array(reader.bytes[oid.start..<oid.end]))
    }
}

/// A certificate carried in a receipt, with what matching the signer and reporting need,
/// computed once per distinct chain.
struct ParsedCertificate: Sendable {
    var certificate: Certificate
    var issuerDER: [UInt8]?
    var subject: String

    init(der: [UInt8]) throws {
        certificate = try Certificate(derEncoded: der)
        var serializer = DER.Serializer()
        issuerDER = (try? serializer.serialize(certificate.issuer)).map { serializer.serializedBytes }
        subject = String(describing: certificate.subject)
    }
}
