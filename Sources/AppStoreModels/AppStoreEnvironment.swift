public import StorekeeperWire

/// Apple's environment names. A struct so that an unknown value is kept as sent.
public struct AppStoreEnvironment: RawStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

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
}
