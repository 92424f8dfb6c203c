/// The body of every error answer, `{"error":{"code","message"}}` (and `balance` where a code
/// says so): written by the server, read by the SDK, from this one type.
public struct ErrorBody: WireMessage {
    public static let location = WireLocation.schema("Error")

    public struct Detail: Codable, Sendable, Hashable {
        public var code: ErrorCode
        /// For people; may change.
        public var message: String
        /// `insufficient_credits`: the user's credit balance (may be below zero).
        public var balance: Int?
    }

    public var error: Detail

    public init(code: ErrorCode, message: String, balance: Int? = nil) {
        error = Detail(code: code, message: message, balance: balance)
    }
}
