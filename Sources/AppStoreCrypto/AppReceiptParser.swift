import Foundation
import SwiftASN1

/// Parses app receipts without I/O and within fixed limits, so that hostile bytes cost at most
/// a bounded amount of memory and time. BER (indefinite lengths, constructed OCTET STRINGs)
/// is accepted because Apple emits it; nesting is bounded by SwiftASN1's parser depth limit.
public struct AppReceiptParser: Sendable {
    public struct Limits: Sendable {
        /// Largest receipt accepted. Apple's with hundreds of purchases are ~100 KB.
        public var maximumBytes = 4 * 1024 * 1024
        /// Most in-app purchase records.
        public var maximumPurchases = 20_000
        /// Most attributes in one payload or purchase record.
        public var maximumAttributes = 200_000
        public init() {}
    }

    public var limits: Limits

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]

    public func parse(_ bytes: [UInt8]) throws(AppReceiptError) -> AppReceipt {
        guard !bytes.isEmpty else { throw AppReceiptError(.empty, "no bytes") }
        guard bytes.count <= limits.maximumBytes else {
            throw AppReceiptError(.tooLarge, "\(bytes.count) bytes exceeds \(limits.maximumBytes)")
        }
        let payload = try Self.signedContent(bytes)
        return try parsePayload(payload)
    }

    /// The base64 form apps send (whitespace tolerated).
    public func parse(base64 text: String) throws(AppReceiptError) -> AppReceipt {
        guard let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters), !data.isEmpty else {
            throw AppReceiptError(.malformedEncoding, "not base64")
        }
        return try parse(Array(data))
    }

    /// `ContentInfo { contentType signedData, [0] SignedData { version, digestAlgorithms,
    /// encapContentInfo { data, [0] OCTET STRING }, … } }` → the octets of the payload.
    static func signedContent(_ bytes: [UInt8]) throws(AppReceiptError) -> [UInt8] {
        do {
            let root = try BER.parse(bytes)
            let contentInfo = try children(root, .sequence)
            guard contentInfo.count >= 2, try ASN1ObjectIdentifier(berEncoded: contentInfo[0]) == signedDataOID else {
                throw AppReceiptError(.notSignedData, "content type is not signedData")
            }
            let explicit = try children(contentInfo[1], ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
            guard let signedDataNode = explicit.first else { throw AppReceiptError(.notSignedData, "empty signedData") }
            let signedData = try children(signedDataNode, .sequence)
            guard signedData.count >= 4 else { throw AppReceiptError(.notSignedData, "signedData has \(signedData.count) fields") }
            let encap = try children(signedData[2], .sequence)
            guard let type = encap.first, try ASN1ObjectIdentifier(berEncoded: type) == dataOID else {
                throw AppReceiptError(.missingContent, "encapsulated content is not data")
            }
            guard encap.count == 2 else { throw AppReceiptError(.missingContent, "no attached content (detached signature)") }
            let wrapped = try children(encap[1], ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific))
            guard let octets = wrapped.first else { throw AppReceiptError(.missingContent, "empty content") }
            return Array(try ASN1OctetString(berEncoded: octets).bytes)
        } catch let error as AppReceiptError {
            throw error
        } catch {
            throw AppReceiptError(.malformedEncoding, "not a CMS structure: \(error)")
        }
    }

    static func children(_ node: ASN1Node, _ identifier: ASN1Identifier) throws -> [ASN1Node] {
        guard node.identifier == identifier, case .constructed(let nodes) = node.content else {
            throw AppReceiptError(.malformedEncoding, "expected \(identifier), found \(node.identifier)")
        }
        return Array(nodes)
    }

    struct Attribute {
        var type: Int
        var value: ArraySlice<UInt8>
    }

    func attributes(_ bytes: [UInt8]) throws(AppReceiptError) -> [Attribute] {
        do {
            let root = try BER.parse(bytes)
            guard root.identifier == .set, case .constructed(let nodes) = root.content else {
                throw AppReceiptError(.malformedPayload, "payload is not a SET")
            }
            var result: [Attribute] = []
            for node in nodes {
                guard result.count < limits.maximumAttributes else {
                    throw AppReceiptError(.limitExceeded, "more than \(limits.maximumAttributes) attributes")
                }
                let fields = try Self.children(node, .sequence)
                guard fields.count == 3 else { throw AppReceiptError(.malformedPayload, "attribute with \(fields.count) fields") }
                let type = try Int(berEncoded: fields[0])
                _ = try Int(berEncoded: fields[1])
                result.append(Attribute(type: type, value: try ASN1OctetString(berEncoded: fields[2]).bytes))
            }
            return result
        } catch let error as AppReceiptError {
            throw error
        } catch {
            throw AppReceiptError(.malformedPayload, "payload: \(error)")
        }
    }

    func parsePayload(_ bytes: [UInt8]) throws(AppReceiptError) -> AppReceipt {
        var receipt = AppReceipt(
            receiptType: nil, bundleId: nil, bundleIdDER: [], applicationVersion: nil, opaqueValue: [], sha1Hash: [],
            creationDate: nil, originalPurchaseDate: nil, originalApplicationVersion: nil, expirationDate: nil,
            inAppPurchases: [], unknownAttributeTypes: [])
        var unknown = Set<Int>()
        for attribute in try attributes(bytes) {
            let value = attribute.value
            switch attribute.type {
            case 0: receipt.receiptType = Self.string(value)
            case 2:
                receipt.bundleId = Self.string(value)
                receipt.bundleIdDER = Array(value)
            case 3: receipt.applicationVersion = Self.string(value)
            case 4: receipt.opaqueValue = Array(value)
            case 5: receipt.sha1Hash = Array(value)
            case 12: receipt.creationDate = Self.date(value)
            case 17:
                guard receipt.inAppPurchases.count < limits.maximumPurchases else {
                    throw AppReceiptError(.limitExceeded, "more than \(limits.maximumPurchases) purchases")
                }
                receipt.inAppPurchases.append(try purchase(Array(value)))
            case 18: receipt.originalPurchaseDate = Self.date(value)
            case 19: receipt.originalApplicationVersion = Self.string(value)
            case 21: receipt.expirationDate = Self.date(value)
            default: unknown.insert(attribute.type)
            }
        }
        receipt.unknownAttributeTypes = unknown.sorted()
        return receipt
    }

    func purchase(_ bytes: [UInt8]) throws(AppReceiptError) -> AppReceipt.InAppPurchase {
        var p = AppReceipt.InAppPurchase()
        for attribute in try attributes(bytes) {
            let v = attribute.value
            switch attribute.type {
            case 1701: p.quantity = Self.integer(v).map { Int(clamping: $0) }
            case 1702: p.productId = Self.string(v)
            case 1703: p.transactionId = Self.string(v)
            case 1704: p.purchaseDate = Self.date(v)
            case 1705: p.originalTransactionId = Self.string(v)
            case 1706: p.originalPurchaseDate = Self.date(v)
            case 1708: p.expiresDate = Self.date(v)
            case 1711: p.webOrderLineItemId = Self.integer(v)
            case 1712: p.cancellationDate = Self.date(v)
            case 1713: p.isTrialPeriod = Self.integer(v).map { $0 != 0 }
            case 1719: p.isInIntroOfferPeriod = Self.integer(v).map { $0 != 0 }
            default: break
            }
        }
        return p
    }

    // MARK: Attribute values

    static func string(_ value: ArraySlice<UInt8>) -> String? {
        guard let node = try? BER.parse(value) else { return nil }
        if let s = try? ASN1UTF8String(berEncoded: node) { return String(s) }
        if let s = try? ASN1IA5String(berEncoded: node) { return String(s) }
        return nil
    }

    static func integer(_ value: ArraySlice<UInt8>) -> Int64? {
        guard let node = try? BER.parse(value) else { return nil }
        return try? Int64(berEncoded: node)
    }

    /// Dates are IA5Strings: RFC 3339 (`2015-08-13T07:50:46Z`), sometimes with a `+0300`
    /// offset (Xcode), sometimes empty (absent).
    static func date(_ value: ArraySlice<UInt8>) -> Date? {
        guard let text = string(value), !text.isEmpty else { return nil }
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        // `+0300` → `+03:00`.
        if text.count > 5, let sign = text.dropLast(4).last, sign == "+" || sign == "-" {
            let fixed = String(text.dropLast(2)) + ":" + String(text.suffix(2))
            return try? Date.ISO8601FormatStyle().parse(fixed)
        }
        return nil
    }
}
