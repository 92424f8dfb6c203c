/// The `status` field of a verifyReceipt response. A struct over the raw integer so that
/// a status Apple adds tomorrow decodes and is kept instead of failing the whole response.
public struct AppStoreStatus: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try LenientString(from: decoder)
        guard let int = text.int else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "status \(text) is not an integer"))
        }
        rawValue = int
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { String(rawValue) }

    public static let valid = AppStoreStatus(0)
    public static let unreadableJSON = AppStoreStatus(21000)
    public static let malformedReceipt = AppStoreStatus(21002)
    public static let notAuthenticated = AppStoreStatus(21003)
    public static let sharedSecretMismatch = AppStoreStatus(21004)
    public static let serverUnavailable = AppStoreStatus(21005)
    public static let subscriptionExpired = AppStoreStatus(21006)
    public static let sandboxReceiptInProduction = AppStoreStatus(21007)
    public static let productionReceiptInSandbox = AppStoreStatus(21008)
    public static let internalDataAccessError = AppStoreStatus(21009)
    public static let accountNotFound = AppStoreStatus(21010)

    /// 21100-21199: internal data access errors whose retryability Apple states in `is-retryable`.
    public var isInternalDataAccessRange: Bool { (21100...21199).contains(rawValue) }
}
