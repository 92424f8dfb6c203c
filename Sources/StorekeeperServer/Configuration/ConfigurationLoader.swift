import AppStoreClient
public import Foundation

/// Reads configuration from a JSON file, then the environment, then explicit overrides (flags),
/// each layer winning over the one before. Unknown keys in the file are errors, so a typo
/// cannot silently fall back to a default.
///
/// Environment keys: `STOREKEEPER_CONFIG` (file path), `STOREKEEPER_HOST`, `STOREKEEPER_PORT`,
/// `STOREKEEPER_DATABASE`, `STOREKEEPER_ADMIN_KEY`, `STOREKEEPER_WORKERS`,
/// `STOREKEEPER_APPLE_PRODUCTION_URL`, `STOREKEEPER_APPLE_SANDBOX_URL`,
/// `STOREKEEPER_ATTEMPT_TIMEOUT`, `STOREKEEPER_LEASE_SECONDS`, `STOREKEEPER_RUN_WORKERS`.
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

    func applyEnvironment(_ c: inout StorekeeperConfiguration) throws {
        var problems: [String] = []
        func number<T: LosslessStringConvertible>(_ key: String, _ apply: (T) -> Void) {
            guard let text = environment[key] else { return }
            if let value = T(text) { apply(value) } else { problems.append("\(key): '\(text)' is not a valid \(T.self)") }
        }
        if let v = environment["STOREKEEPER_HOST"] { c.host = v }
        number("STOREKEEPER_PORT") { (v: Int) in c.port = v }
        if let v = environment["STOREKEEPER_DATABASE"] { c.databasePath = v }
        if let v = environment["STOREKEEPER_ADMIN_KEY"] { c.adminKey = v }
        number("STOREKEEPER_WORKERS") { (v: Int) in c.workers = v }
        if let v = environment["STOREKEEPER_APPLE_PRODUCTION_URL"] { c.appleEndpoints.production = v }
        if let v = environment["STOREKEEPER_APPLE_SANDBOX_URL"] { c.appleEndpoints.sandbox = v }
        number("STOREKEEPER_ATTEMPT_TIMEOUT") { (v: Double) in c.attemptTimeoutSeconds = v }
        number("STOREKEEPER_LEASE_SECONDS") { (v: Double) in c.leaseSeconds = v }
        number("STOREKEEPER_RUN_WORKERS") { (v: Bool) in c.runWorkers = v }
        guard problems.isEmpty else { throw Failure(problems: problems) }
    }
}
