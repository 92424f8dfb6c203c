import Foundation
import SwiftASN1
@_spi(CMS) @_spi(FixedExpiryValidationTime) import X509

/// The attribute types of an app receipt's payload (the fields Apple documents for app receipts).
enum ReceiptField {
    static let environment = 0
    static let bundleId = 2
    static let applicationVersion = 3
    static let opaqueValue = 4
    static let sha1Hash = 5
    static let creationDate = 12
    static let inAppPurchase = 17
    static let originalApplicationVersion = 19
    static let expirationDate = 21

    static let quantity = 1701
    static let productId = 1702
    static let transactionId = 1703
    static let purchaseDate = 1704
    static let originalTransactionId = 1705
    static let originalPurchaseDate = 1706
    static let subscriptionExpirationDate = 1708
    static let webOrderLineItemId = 1711
    static let cancellationDate = 1712
    static let trialPeriod = 1713
    static let introOfferPeriod = 1719
}

/// One `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`,
/// whose value is itself DER (a UTF8String, IA5String date, INTEGER or a nested SET).
struct ReceiptAttribute {
    var type: Int
    var version: Int = 1
    var value: [UInt8]

    static func utf8(_ type: Int, _ text: String) throws -> ReceiptAttribute {
        var s = DER.Serializer()
        try s.serialize(ASN1UTF8String(text))
        return ReceiptAttribute(type: type, value: s.serializedBytes)
    }

    static func date(_ type: Int, _ date: Date) throws -> ReceiptAttribute {
        var s = DER.Serializer()
        try s.serialize(ASN1IA5String(Self.rfc3339(date)))
        return ReceiptAttribute(type: type, value: s.serializedBytes)
    }

    static func integer(_ type: Int, _ value: Int) throws -> ReceiptAttribute {
        var s = DER.Serializer()
        try s.serialize(value)
        return ReceiptAttribute(type: type, value: s.serializedBytes)
    }

    static let rfc3339Style = Date.ISO8601FormatStyle()

    static func rfc3339(_ date: Date) -> String { rfc3339Style.format(date) }

    static func serializeSet(_ attributes: [ReceiptAttribute]) throws -> [UInt8] {
        var s = DER.Serializer()
        try s.appendConstructedNode(identifier: .set) { set in
            for attribute in attributes {
                try set.appendConstructedNode(identifier: .sequence) { seq in
                    try seq.serialize(attribute.type)
                    try seq.serialize(attribute.version)
                    try seq.serialize(ASN1OctetString(contentBytes: attribute.value[...]))
                }
            }
        }
        return s.serializedBytes
    }

    /// Parses the simulator's own payload SET. Only used by the simulator on receipts it signed.
    static func parseSet(_ bytes: [UInt8]) throws -> [ReceiptAttribute] {
        let root = try DER.parse(bytes)
        guard root.identifier == .set, case .constructed(let children) = root.content else {
            throw ASN1Error.unexpectedFieldType(root.identifier)
        }
        var result: [ReceiptAttribute] = []
        for child in children {
            try DER.sequence(child, identifier: .sequence) { nodes in
                let type = try Int(derEncoded: &nodes)
                let version = try Int(derEncoded: &nodes)
                let value = try ASN1OctetString(derEncoded: &nodes)
                result.append(ReceiptAttribute(type: type, version: version, value: Array(value.bytes)))
            }
        }
        return result
    }

    var stringValue: String? {
        guard let node = try? DER.parse(value) else { return nil }
        if let s = try? ASN1UTF8String(derEncoded: node) { return String(s) }
        if let s = try? ASN1IA5String(derEncoded: node) { return String(s) }
        return nil
    }
}

/// What the simulator needs back from a receipt it issued.
struct DecodedSimulatorReceipt {
    var bundleId: String
    var environment: String
    var deviceId: UUID
    var transactionIds: [String]
}

/// Builds and reads CMS SignedData receipts. The only file that touches swift-certificates' CMS SPI.
enum ReceiptEncoding {
    static func sign(payload: [UInt8], pki: SimulatorPKI) throws -> [UInt8] {
        try CMS.sign(
            payload, signatureAlgorithm: .ecdsaWithSHA256, additionalIntermediateCertificates: [pki.intermediate],
            certificate: pki.leaf, privateKey: .init(pki.leafKey), signingTime: nil, detached: false)
    }

    /// `ContentInfo { contentType, [0] SignedData { version, digestAlgorithms, encapContentInfo { type, [0] OCTET STRING } } }`:
    /// walks to the signed payload of a DER receipt the simulator made.
    static func attachedContent(_ bytes: [UInt8]) throws -> [UInt8] {
        func children(_ node: ASN1Node) throws -> [ASN1Node] {
            guard case .constructed(let nodes) = node.content else { throw ReadError.malformed }
            return Array(nodes)
        }
        let contentInfo = try children(try DER.parse(bytes))
        guard contentInfo.count == 2 else { throw ReadError.malformed }
        let signedData = try children(try children(contentInfo[1]).first ?? { throw ReadError.malformed }())
        guard signedData.count >= 3 else { throw ReadError.malformed }
        let encap = try children(signedData[2])
        guard encap.count == 2, let octets = try children(encap[1]).first else { throw ReadError.malformed }
        return Array(try ASN1OctetString(derEncoded: octets).bytes)
    }

    enum ReadError: Error {
        case malformed
        case notSignedBySimulator
    }

    /// Checks the signature against the simulator's root, then reads the payload.
    static func read(_ bytes: [UInt8], pki: SimulatorPKI, now: Date) async throws -> DecodedSimulatorReceipt {
        let content: [UInt8]
        do {
            content = try attachedContent(bytes)
        } catch {
            throw ReadError.malformed
        }
        let verdict = await CMS.isValidAttachedSignature(
            signatureBytes: bytes, trustRoots: CertificateStore([pki.root])
        ) {
            RFC5280Policy(fixedExpiryValidationTime: now)
        }
        guard case .success = verdict else { throw ReadError.notSignedBySimulator }
        guard let attributes = try? ReceiptAttribute.parseSet(content) else { throw ReadError.malformed }
        var bundleId: String?
        var environment: String?
        var deviceId: UUID?
        var transactionIds: [String] = []
        for attribute in attributes {
            switch attribute.type {
            case ReceiptField.bundleId: bundleId = attribute.stringValue
            case ReceiptField.environment: environment = attribute.stringValue
            case ReceiptField.opaqueValue:
                if attribute.value.count == 16 {
                    let b = attribute.value
                    deviceId = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
                }
            case ReceiptField.inAppPurchase:
                guard let fields = try? ReceiptAttribute.parseSet(attribute.value) else { throw ReadError.malformed }
                if let id = fields.first(where: { $0.type == ReceiptField.transactionId })?.stringValue {
                    transactionIds.append(id)
                }
            default: break
            }
        }
        guard let bundleId, let environment, let deviceId else { throw ReadError.malformed }
        return DecodedSimulatorReceipt(bundleId: bundleId, environment: environment, deviceId: deviceId, transactionIds: transactionIds)
    }
}
