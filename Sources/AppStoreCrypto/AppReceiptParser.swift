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
        guard let data = Self.strictBase64(text) else {
            throw AppReceiptError(.malformedEncoding, "not base64")
        }
        return try parse(data)
    }

    /// Receipt base64 read by one rule everywhere (the API and `storekeeper inspect`): space,
    /// tab, CR and LF are ignored, and any other character outside the base64 alphabet refuses
    /// the whole text. Nil when nothing is left or it does not decode.
    public static func strictBase64(_ text: String) -> [UInt8]? {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        let cleaned = text.utf8.contains(where: isSpace) ? String(decoding: text.utf8.filter { !isSpace($0) }, as: UTF8.self) : text
        guard !cleaned.isEmpty, let data = Data(base64Encoded: cleaned), !data.isEmpty else { return nil }
        return Array(data)
    }

    /// DER of the OIDs compared below (contents octets only).
    static let signedDataOIDBytes: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x02]
    static let dataOIDBytes: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07, 0x01]

    /// `ContentInfo { contentType signedData, [0] SignedData { version, digestAlgorithms,
    /// encapContentInfo { data, [0] OCTET STRING }, … } }` → the octets of the payload. The
    /// certificates and signer infos are stepped over by their lengths, not read.
    static func signedContent(_ bytes: [UInt8]) throws(AppReceiptError) -> [UInt8] {
        let reader = BERReader(bytes)
        do {
            let root = try reader.element(at: 0)
            let contentInfo = try reader.children(of: root, tag: BERElement.sequence)
            guard contentInfo.count >= 2, contentInfo[0].tag == BERElement.objectIdentifier,
                reader.bytes[contentInfo[0].contents].elementsEqual(signedDataOIDBytes)
            else { throw AppReceiptError(.notSignedData, "content type is not signedData") }
            guard let signedDataNode = try reader.children(of: contentInfo[1], tag: BERElement.context0).first else {
                throw AppReceiptError(.notSignedData, "empty signedData")
            }
            let signedData = try reader.children(of: signedDataNode, tag: BERElement.sequence)
            guard signedData.count >= 4 else { throw AppReceiptError(.notSignedData, "signedData has \(signedData.count) fields") }
            let encap = try reader.children(of: signedData[2], tag: BERElement.sequence)
            guard let type = encap.first, type.tag == BERElement.objectIdentifier, reader.bytes[type.contents].elementsEqual(dataOIDBytes)
            else { throw AppReceiptError(.missingContent, "encapsulated content is not data") }
            guard encap.count == 2 else { throw AppReceiptError(.missingContent, "no attached content (detached signature)") }
            guard let octets = try reader.children(of: encap[1], tag: BERElement.context0).first, octets.tag == BERElement.octetString
            else { throw AppReceiptError(.missingContent, "empty content") }
            return Array(try reader.stringBytes(octets))
        } catch let error as AppReceiptError {
            throw error
        } catch {
            throw AppReceiptError(.malformedEncoding, "not a CMS structure: \(error)")
        }
    }

    struct Attribute {
        var type: Int
        var value: ArraySlice<UInt8>
    }

    /// `SET OF SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    func attributes(_ bytes: [UInt8]) throws(AppReceiptError) -> [Attribute] {
        let reader = BERReader(bytes)
        do {
            let root = try reader.element(at: 0)
            guard root.tag == BERElement.set, root.isConstructed else { throw AppReceiptError(.malformedPayload, "payload is not a SET") }
            var result: [Attribute] = []
            // A purchase carries about a dozen attributes, a receipt's payload a few more.
            result.reserveCapacity(16)
            let maximum = limits.maximumAttributes
            try reader.forEachChild(of: root) { node in
                guard result.count < maximum else { throw AppReceiptError(.limitExceeded, "more than \(maximum) attributes") }
                do {
                    let (type, value) = try Self.attribute(node, in: reader)
                    result.append(Attribute(type: type, value: value))
                } catch let error as AppReceiptError {
                    throw error
                } catch {
                    throw AppReceiptError(.malformedPayload, "payload: \(error)")
                }
            }
            return result
        } catch let error as AppReceiptError {
            throw error
        } catch {
            throw AppReceiptError(.malformedPayload, "payload: \(error)")
        }
    }

    /// One `SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`, its three fields read
    /// in place.
    static func attribute(_ node: BERElement, in reader: BERReader) throws -> (type: Int, value: ArraySlice<UInt8>) {
        guard node.tag == BERElement.sequence, node.isConstructed else {
            throw AppReceiptError(.malformedPayload, "attribute is not a SEQUENCE")
        }
        var cursor = node.contents.lowerBound
        func next() throws(BERError) -> BERElement? {
            guard cursor < node.contents.upperBound else { return nil }
            let field = try reader.element(at: cursor, depth: 2)
            guard field.end <= node.contents.upperBound else { throw BERError(offset: cursor, reason: "child overruns its parent") }
            cursor = field.end
            return field
        }
        guard let typeField = try next(), let versionField = try next(), let valueField = try next(), try next() == nil,
            valueField.tag == BERElement.octetString
        else { throw AppReceiptError(.malformedPayload, "attribute is not three fields (type, version, OCTET STRING value)") }
        let type = try reader.integer(typeField)
        _ = try reader.integer(versionField)
        guard let small = Int(exactly: type) else { throw AppReceiptError(.malformedPayload, "attribute type out of range") }
        return (small, try reader.stringBytes(valueField))
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

    /// An attribute value holding a UTF8String or IA5String.
    static func string(_ value: ArraySlice<UInt8>) -> String? {
        if let text = shortString(value) {
            if value.first == BERElement.ia5String, text.contains(where: { $0 >= 0x80 }) { return nil }
            return String(decoding: text, as: UTF8.self)
        }
        let reader = BERReader(Array(value))
        guard let element = try? reader.element(at: 0), element.end == reader.bytes.count,
            element.tag == BERElement.utf8String || element.tag == BERElement.ia5String,
            let text = try? reader.stringBytes(element)
        else { return nil }
        if element.tag == BERElement.ia5String, text.contains(where: { $0 >= 0x80 }) { return nil }
        return String(decoding: text, as: UTF8.self)
    }

    /// The contents of a primitive UTF8String or IA5String with a one-octet length that spans the
    /// whole value (how Apple writes every string and date), read in place; nil for any other
    /// shape, which the general reader then reads.
    static func shortString(_ value: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard value.count >= 2, let tag = value.first, tag == BERElement.utf8String || tag == BERElement.ia5String else { return nil }
        let length = value[value.startIndex + 1]
        guard length < 0x80, Int(length) == value.count - 2 else { return nil }
        return value.dropFirst(2)
    }

    /// An attribute value holding an INTEGER.
    static func integer(_ value: ArraySlice<UInt8>) -> Int64? {
        let reader = BERReader(Array(value))
        guard let element = try? reader.element(at: 0), element.end == reader.bytes.count else { return nil }
        return try? reader.integer(element)
    }

    /// Dates are IA5Strings: RFC 3339 (`2015-08-13T07:50:46Z`), sometimes with a `+0300`
    /// offset (Xcode), sometimes empty (absent).
    static func date(_ value: ArraySlice<UInt8>) -> Date? {
        if value.first == BERElement.ia5String, let text = shortString(value),
            let date = text.withUnsafeBufferPointer({ ReceiptDate.utcSeconds($0) })
        {
            return date
        }
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
