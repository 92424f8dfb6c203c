import AppStoreClient
import Configuration
public import Foundation

/// Reads configuration from a JSON file, then the environment, then explicit overrides (flags),
/// each layer winning over the one before. Unknown keys in the file are errors, so a typo
/// cannot silently fall back to a default; a value of the wrong type in the environment is an
/// error naming its variable.
///
/// The environment is read through swift-configuration (`EnvironmentVariablesProvider`): each
/// setting in ``environmentSettings`` has a key such as `storekeeper.attemptTimeout`, which is
/// the variable `STOREKEEPER_ATTEMPT_TIMEOUT`. `STOREKEEPER_CONFIG` names the file.
public struct ConfigurationLoader {
    public struct Failure: Error, CustomStringConvertible {
        public var problems: [String]
        public var description: String {
            "invalid configuration:\n" + problems.map { "  - \($0)" }.joined(separator: "\n")
        }
    }

    public var environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    /// Parses a configuration file's bytes, naming any unknown or mistyped key.
    public static func parse(_ data: Data) throws -> StorekeeperConfiguration {
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw Failure(problems: ["<file>: not a JSON object"])
        }
        var problems: [String] = []
        let topKeys = Set(StorekeeperConfiguration.CodingKeys.allCases.map(\.rawValue))
        for key in object.keys.sorted() where !topKeys.contains(key) { problems.append("\(key): unknown key") }
        let appKeys = Set(AppConfiguration.CodingKeys.allCases.map(\.rawValue))
        for (index, app) in ((object["apps"] as? [[String: Any]]) ?? []).enumerated() {
            for key in app.keys.sorted() where !appKeys.contains(key) { problems.append("apps[\(index)].\(key): unknown key") }
        }
        guard problems.isEmpty else { throw Failure(problems: problems) }
        do {
            return try JSONDecoder().decode(StorekeeperConfiguration.self, from: data)
        } catch let error as DecodingError {
            throw Failure(problems: [Self.describe(error)])
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            var text = ""
            for key in codingPath {
                if let index = key.intValue { text += "[\(index)]" } else { text += (text.isEmpty ? "" : ".") + key.stringValue }
            }
            return text.isEmpty ? "<root>" : text
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])): required key missing"
        case .typeMismatch(let type, let context): return "\(path(context.codingPath)): expected \(type)"
        case .valueNotFound(let type, let context): return "\(path(context.codingPath)): expected \(type), found null"
        case .dataCorrupted(let context): return "\(path(context.codingPath)): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    /// File (if any) → environment → `overrides`, then validation.
    public func load(
        file: String?, base: StorekeeperConfiguration = StorekeeperConfiguration(),
        overrides: (inout StorekeeperConfiguration) -> Void = { _ in }
    ) throws -> StorekeeperConfiguration {
        var configuration = base
        if let path = file ?? environment["STOREKEEPER_CONFIG"] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw Failure(problems: ["config: cannot read file '\(path)'"])
            }
            configuration = try Self.parse(data)
        }
        try applyEnvironment(&configuration)
        overrides(&configuration)
        let problems = configuration.validationProblems()
        guard problems.isEmpty else { throw Failure(problems: problems) }
        return configuration
    }

    /// One setting the environment may carry: its swift-configuration key, and how its value
    /// (read as the type the setting needs) applies.
    public struct EnvironmentSetting: Sendable {
        enum Value {
            case string(String)
            case int(Int)
            case double(Double)
            case bool(Bool)
        }
        enum Kind { case string, int, double, bool }

        /// The key, `storekeeper.` and the setting's name (`storekeeper.leaseSeconds`).
        public var key: String
        let kind: Kind
        let isSecret: Bool
        let apply: @Sendable (inout StorekeeperConfiguration, Value) -> Void

        /// The environment variable swift-configuration reads for `key`.
        public var variable: String {
            var name = ""
            for character in key {
                if character == "." {
                    name += "_"
                } else if character.isUppercase {
                    name += "_" + character.uppercased()
                } else {
                    name += character.uppercased()
                }
            }
            return name
        }

        static func string(_ key: String, secret: Bool = false, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, String) -> Void) -> Self
        {
            Self(key: "storekeeper." + key, kind: .string, isSecret: secret) { c, v in if case .string(let s) = v { apply(&c, s) } }
        }
        static func int(_ key: String, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Int) -> Void) -> Self {
            Self(key: "storekeeper." + key, kind: .int, isSecret: false) { c, v in if case .int(let n) = v { apply(&c, n) } }
        }
        static func double(_ key: String, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Double) -> Void) -> Self {
            Self(key: "storekeeper." + key, kind: .double, isSecret: false) { c, v in if case .double(let d) = v { apply(&c, d) } }
        }
        static func bool(_ key: String, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Bool) -> Void) -> Self {
            Self(key: "storekeeper." + key, kind: .bool, isSecret: false) { c, v in if case .bool(let b) = v { apply(&c, b) } }
        }
    }

    /// Every setting the environment may carry: the table in docs/DEPLOYMENT.md lists the same,
    /// and `ConfigurationTests` sets each one and checks that it lands.
    public static let environmentSettings: [EnvironmentSetting] = [
        .string("host") { $0.host = $1 },
        .int("port") { $0.port = $1 },
        .string("database") { $0.databasePath = $1 },
        .string("adminKey", secret: true) { $0.adminKey = $1 },
        .int("workers") { $0.workers = $1 },
        .string("apple.productionUrl") { $0.appleEndpoints.production = $1 },
        .string("apple.sandboxUrl") { $0.appleEndpoints.sandbox = $1 },
        .double("attemptTimeout") { $0.attemptTimeoutSeconds = $1 },
        .double("leaseSeconds") { $0.leaseSeconds = $1 },
        .bool("runWorkers") { $0.runWorkers = $1 },
    ]

    func applyEnvironment(_ c: inout StorekeeperConfiguration) throws {
        let secrets = Set(Self.environmentSettings.filter(\.isSecret).map(\.variable))
        let config = ConfigReader(
            provider: EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: .specific(secrets)))
        var problems: [String] = []
        for setting in Self.environmentSettings {
            let key = ConfigKey(setting.key)
            // Present as text first, then read as its type: a value that does not convert is an
            // error naming the variable, never a silent default.
            guard let text = config.string(forKey: key, isSecret: setting.isSecret) else { continue }
            let value: EnvironmentSetting.Value? =
                switch setting.kind {
                case .string: .string(text)
                case .int: config.int(forKey: key).map(EnvironmentSetting.Value.int)
                case .double: config.double(forKey: key).map(EnvironmentSetting.Value.double)
                case .bool: config.bool(forKey: key).map(EnvironmentSetting.Value.bool)
                }
            guard let value else {
                problems.append("\(setting.variable): '\(setting.isSecret ? "<secret>" : text)' is not a valid \(setting.kind)")
                continue
            }
            setting.apply(&c, value)
        }
        guard problems.isEmpty else { throw Failure(problems: problems) }
    }
}
