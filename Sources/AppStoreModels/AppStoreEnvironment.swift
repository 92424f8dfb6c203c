/// Apple's environment names. A struct so that an unknown value is kept as sent.
public struct AppStoreEnvironment: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public static let production = AppStoreEnvironment(rawValue: "Production")
    public static let sandbox = AppStoreEnvironment(rawValue: "Sandbox")

    /// Lower-case name used in our own API, database and ledger.
    public var storageName: String {
        switch self {
        case .production: return "production"
        case .sandbox: return "sandbox"
        default: return rawValue.lowercased()
        }
    }

    public init?(storageName: String) {
        switch storageName.lowercased() {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }

    public var description: String { rawValue }
}
