import Foundation

/// What went wrong, with a stable code an app can switch on (docs/SDK.md says what to do).
public struct StorekeeperKitError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server could not be reached or answered 5xx/202: try again later.
        public static let serverUnavailable = Code(rawValue: "server_unavailable")
        /// The answer failed its signature check: ignore it, keep what was verified before.
        public static let forgedAnswer = Code(rawValue: "forged_answer")
        /// The server refused for good (its error code is in `serverCode`).
        public static let refused = Code(rawValue: "refused")
        /// No verified entitlements, and none cached recently enough.
        public static let noEntitlements = Code(rawValue: "no_entitlements")
    }

    public var code: Code
    public var message: String
    /// For `refused`: the server's own error code, as its JSON error body states it
    /// (`{"error":{"code"}}`), or `http_<status>` when the body had none.
    public var serverCode: String?

    public init(_ code: Code, _ message: String, serverCode: String? = nil) {
        self.code = code
        self.message = message
        self.serverCode = serverCode
    }

    public var description: String { "\(code): \(message)" }
}
