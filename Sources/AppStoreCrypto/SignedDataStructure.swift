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
    var certificates: [Certificate]
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

    static let messageDigestOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 9, 4]

    init(_ bytes: [UInt8]) throws {
        let contentInfo = try AppReceiptParser.children(try BER.parse(bytes), .sequence)
        guard contentInfo.count >= 2 else { throw AppReceiptError(.notSignedData, "ContentInfo too short") }
        let explicit = try AppReceiptParser.children(contentInfo[1], ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
        guard let signedDataNode = explicit.first else { throw AppReceiptError(.notSignedData, "empty") }
        let fields = try AppReceiptParser.children(signedDataNode, .sequence)
        guard fields.count >= 4 else { throw AppReceiptError(.notSignedData, "SignedData too short") }
        let encap = try AppReceiptParser.children(fields[2], .sequence)
        guard encap.count == 2,
            let octets = try AppReceiptParser.children(encap[1], ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)).first
        else { throw AppReceiptError(.missingContent, "no attached content") }
        content = Array(try ASN1OctetString(berEncoded: octets).bytes)

        var certificates: [Certificate] = []
        var digest = SHA256()
        var signerInfos: ASN1Node?
        for field in fields.dropFirst(3) {
            if field.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
                for node in try AppReceiptParser.children(field, field.identifier) {
                    let der = Array(node.encodedBytes)
                    digest.update(data: der)
                    certificates.append(try Certificate(derEncoded: der))
                }
            } else if field.identifier == .set {
                signerInfos = field
            }
        }
        self.certificates = certificates
        certificatesDigest = Data(digest.finalize())
        guard let signerInfos, let signer = try AppReceiptParser.children(signerInfos, .set).first,
            try AppReceiptParser.children(signerInfos, .set).count == 1
        else { throw AppReceiptError(.notSignedData, "expected exactly one signer") }

        let info = try AppReceiptParser.children(signer, .sequence)
        guard info.count >= 5 else { throw AppReceiptError(.notSignedData, "SignerInfo too short") }
        let sid = try AppReceiptParser.children(info[1], .sequence)
        guard sid.count == 2 else { throw AppReceiptError(.notSignedData, "signer is not identified by issuer and serial") }
        signerIssuerDER = Array(sid[0].encodedBytes)
        guard case .primitive(let serial) = sid[1].content else { throw AppReceiptError(.notSignedData, "serial") }
        signerSerial = serial
        digestAlgorithm = try Self.algorithm(info[2])
        var index = 3
        if info[index].identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) {
            let attributes = try AppReceiptParser.children(info[index], info[index].identifier)
            var body: [UInt8] = []
            for attribute in attributes {
                body += attribute.encodedBytes
                let parts = try AppReceiptParser.children(attribute, .sequence)
                if parts.count == 2, try ASN1ObjectIdentifier(berEncoded: parts[0]) == Self.messageDigestOID,
                    let value = try AppReceiptParser.children(parts[1], .set).first
                {
                    messageDigest = Array(try ASN1OctetString(berEncoded: value).bytes)
                }
            }
            // The signature covers the attributes as a DER `SET OF`, not as the [0] field.
            var serializer = DER.Serializer()
            serializer.appendConstructedNode(identifier: .set) { $0.serializeRawBytes(body) }
            signedAttributes = serializer.serializedBytes
            index += 1
        }
        guard info.count > index + 1 else { throw AppReceiptError(.notSignedData, "SignerInfo lacks signature") }
        signatureAlgorithm = try Self.algorithm(info[index])
        signature = Array(try ASN1OctetString(berEncoded: info[index + 1]).bytes)
    }

    static func algorithm(_ node: ASN1Node) throws -> ASN1ObjectIdentifier {
        let parts = try AppReceiptParser.children(node, .sequence)
        guard let oid = parts.first else { throw AppReceiptError(.notSignedData, "empty algorithm identifier") }
        return try ASN1ObjectIdentifier(berEncoded: oid)
    }
}
