public import Foundation

/// A decoded app receipt: the payload of the CMS SignedData Apple (or a test CA) signed.
///
/// ```
/// Payload ::= SET OF ReceiptAttribute
/// ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }
/// ```
/// Each `value` is itself DER: a UTF8String, an IA5String date, an INTEGER, or for type 17
/// (one in-app purchase) a nested `Payload`.
public struct AppReceipt: Sendable, Hashable {
    /// Attribute 0: `Production`, `ProductionSandbox`, `Xcode` (Apple's name for it).
    public var receiptType: String?
    /// Attribute 2, and its DER bytes (the device hash covers the DER, not the text).
    public var bundleId: String?
    public var bundleIdDER: [UInt8]
    /// Attribute 3.
    public var applicationVersion: String?
    /// Attribute 4.
    public var opaqueValue: [UInt8]
    /// Attribute 5: SHA-1 of device id ‖ opaque value ‖ bundle id DER.
    public var sha1Hash: [UInt8]
    /// Attribute 12.
    public var creationDate: Date?
    /// Attribute 18.
    public var originalPurchaseDate: Date?
    /// Attribute 19.
    public var originalApplicationVersion: String?
    /// Attribute 21.
    public var expirationDate: Date?
    /// Attribute 17, in receipt order.
    public var inAppPurchases: [InAppPurchase]
    /// Types seen that this model does not name (Apple adds undocumented ones); kept, not fatal.
    public var unknownAttributeTypes: [Int]

    public enum Environment: String, Sendable {
        case production
        case sandbox
        case xcode
        case unknown
    }

    public var environment: Environment {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        case "Xcode": .xcode
        default: .unknown
        }
    }

    /// One in-app purchase record (attribute 17's nested set).
    public struct InAppPurchase: Sendable, Hashable {
        public var quantity: Int?
        public var productId: String?
        public var transactionId: String?
        public var originalTransactionId: String?
        public var purchaseDate: Date?
        public var originalPurchaseDate: Date?
        public var expiresDate: Date?
        public var webOrderLineItemId: Int64?
        public var cancellationDate: Date?
        public var isTrialPeriod: Bool?
        public var isInIntroOfferPeriod: Bool?
    }
}

/// Why bytes are not an app receipt. Only malformed input throws; a signature that does not
/// verify is a `ReceiptSignatureVerdict`, not an error.
public struct AppReceiptError: Error, Hashable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public static let empty = Code("empty")
        public static let tooLarge = Code("too_large")
        public static let malformedEncoding = Code("malformed_encoding")
        public static let notSignedData = Code("not_signed_data")
        public static let missingContent = Code("missing_content")
        public static let malformedPayload = Code("malformed_payload")
        public static let limitExceeded = Code("limit_exceeded")
        public var description: String { name }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// Errors compare by code, so tests can build the expected one.
    public static func == (a: Self, b: Self) -> Bool { a.code == b.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
