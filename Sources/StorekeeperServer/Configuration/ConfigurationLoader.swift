import AppStoreClient
public import Configuration
public import Foundation
import StorekeeperDomain

/// Reads configuration through swift-configuration: a JSON file (`JSONSnapshot`), then the
/// environment (`EnvironmentVariablesProvider`), then flags (`InMemoryProvider`), each layer
/// winning over the one before, for every key in ``ConfigurationSetting/all``. Unknown keys in the
/// file are errors, so a typo cannot silently fall back to a default; a value of the wrong type is
/// an error naming its key or variable (`appleTimeouts.connectSeconds` is
/// `STOREKEEPER_APPLE_TIMEOUTS_CONNECT_SECONDS`). `STOREKEEPER_CONFIG` names the file.
///
/// The per-layer lookup is ours rather than `ConfigReader`'s: the reader answers nil both for a
/// missing key and for one that does not convert, and a configuration must tell them apart.
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

    /// Parses a configuration file's bytes over the defaults, naming any unknown or mistyped key.
    public static func parse(_ data: Data) throws -> StorekeeperConfiguration {
        var configuration = StorekeeperConfiguration()
        let file = try FileLayer(data)
        configuration.apps = file.apps ?? []
        try apply(layers: [file.layer], to: &configuration)
        return configuration
    }

    /// File (if any) → environment → `flags` (setting keys, as ``ConfigurationSetting/key``)
    /// → `overrides` (values derived from flags, such as the embedded simulator's endpoints),
    /// then validation. Each layer is a swift-configuration snapshot; a setting takes its value
    /// from the first layer, flags first, that has it.
    public func load(
        file: String?, base: StorekeeperConfiguration = StorekeeperConfiguration(), flags: [String: ConfigContent] = [:],
        overrides: (inout StorekeeperConfiguration) -> Void = { _ in }
    ) throws -> StorekeeperConfiguration {
        var configuration = base
        var layers: [Layer] = []
        if let path = file ?? environment["STOREKEEPER_CONFIG"] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw Failure(problems: ["config: cannot read file '\(path)'"])
            }
            let file = try FileLayer(data)
            if var apps = file.apps {
                try Self.readRateFiles(&apps, directory: (path as NSString).deletingLastPathComponent)
                configuration.apps = apps
            }
            layers.append(file.layer)
        }
        let secrets = Set(ConfigurationSetting.all.filter(\.isSecret).map(\.variable))
        layers.insert(
            Layer(
                snapshot: EnvironmentVariablesProvider(environmentVariables: environment, secretsSpecifier: .specific(secrets)).snapshot(),
                components: \.environmentComponents, name: \.variable, raw: { environment[$0.variable] }), at: 0)
        let known = Set(ConfigurationSetting.all.map(\.key))
        let unknownFlags = flags.keys.filter { !known.contains($0) }
        precondition(unknownFlags.isEmpty, "flags for unknown settings: \(unknownFlags)")
        let flagValues = Dictionary(
            uniqueKeysWithValues: flags.map {
                (AbsoluteConfigKey($0.key.split(separator: ".").map(String.init)), ConfigValue($0.value, isSecret: false))
            })
        layers.insert(
            Layer(snapshot: InMemoryProvider(name: "flags", values: flagValues).snapshot(), components: \.components, name: \.key, raw: { _ in nil }),
            at: 0)
        try Self.apply(layers: layers, to: &configuration)
        overrides(&configuration)
        let problems = configuration.validationProblems()
        guard problems.isEmpty else { throw Failure(problems: problems) }
        return configuration
    }

    /// Reads each app's `reporting.ratesFile` (relative to the configuration file's directory) into
    /// its rates. Files are read here, at start: a report never reads a file or the network.
    static func readRateFiles(_ apps: inout [AppConfiguration], directory: String) throws {
        var problems: [String] = []
        for index in apps.indices {
            guard let file = apps[index].reporting?.ratesFile else { continue }
            let place = "apps[\(index)].reporting.ratesFile"
            let path = file.hasPrefix("/") || directory.isEmpty ? file : directory + "/" + file
            // A rates table is small; a file far larger is not one.
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                (attributes[.size] as? NSNumber)?.intValue ?? 0 <= 8 * 1024 * 1024, let data = FileManager.default.contents(atPath: path),
                let text = String(data: data, encoding: .utf8)
            else {
                problems.append("\(place): cannot read '\(file)' as UTF-8 text of at most 8 MiB")
                continue
            }
            problems += apps[index].reporting!.merge(ratesCSV: text).map { "\(place) '\(file)' \($0)" }
        }
        guard problems.isEmpty else { throw Failure(problems: problems) }
    }

    /// One source of settings: a swift-configuration snapshot, the key each setting has in it,
    /// and how a problem names the setting (the file's key, or the environment variable).
    struct Layer {
        var snapshot: any ConfigSnapshot
        var components: KeyPath<ConfigurationSetting, [String]>
        var name: KeyPath<ConfigurationSetting, String>
        /// The text as given, for messages (the environment's; nil where values are typed).
        var raw: (ConfigurationSetting) -> String?
    }

    /// Every setting from the first layer that has it. A value that does not convert to the
    /// setting's type is an error naming the key or variable, never a silent default.
    static func apply(layers: [Layer], to configuration: inout StorekeeperConfiguration) throws {
        var problems: [String] = []
        for setting in ConfigurationSetting.all {
            for layer in layers {
                let name = setting[keyPath: layer.name]
                let found: ConfigValue?
                do {
                    found = try layer.snapshot.value(forKey: AbsoluteConfigKey(setting[keyPath: layer.components]), type: setting.type).value
                } catch {
                    if let text = layer.raw(setting) {
                        problems.append("\(name): '\(setting.isSecret ? "<secret>" : text)' is not a valid \(setting.typeName)")
                    } else {
                        problems.append("\(name): expected \(setting.typeName)")
                    }
                    break
                }
                guard let found else { continue }
                if let problem = setting.apply(&configuration, found.content) { problems.append("\(name): \(problem)") }
                break
            }
        }
        guard problems.isEmpty else { throw Failure(problems: problems) }
    }

    /// The configuration file: its settings as a swift-configuration `JSONSnapshot`, and its
    /// `apps` decoded apart (a list of objects, which the snapshot cannot hold). Keys that are
    /// no setting, and objects where a value belongs (or the reverse), are errors here, since
    /// the snapshot would flatten them into keys nobody reads.
    struct FileLayer {
        var layer: Layer
        var apps: [AppConfiguration]?

        init(_ data: Data) throws {
            guard var object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
                throw Failure(problems: ["<file>: not a JSON object"])
            }
            var problems: [String] = []
            let appsValue = object.removeValue(forKey: "apps")
            let settings = Set(ConfigurationSetting.all.map(\.key))
            let sections = Set(
                ConfigurationSetting.all.flatMap { setting in
                    let parts = setting.components.dropLast()
                    return parts.indices.map { parts[...$0].joined(separator: ".") }
                })
            func walk(_ object: [String: Any], _ prefix: String) {
                for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                    let path = prefix.isEmpty ? key : prefix + "." + key
                    if settings.contains(path) {
                        if value is [String: Any] { problems.append("\(path): expected a value, found an object") }
                    } else if sections.contains(path) {
                        if let inner = value as? [String: Any] {
                            walk(inner, path)
                        } else if !(value is NSNull) {
                            problems.append("\(path): expected an object")
                        }
                    } else {
                        problems.append("\(path): unknown key")
                    }
                }
            }
            walk(object, "")
            let appKeys = Set(AppConfiguration.CodingKeys.allCases.map(\.rawValue))
            if let appsValue, !(appsValue is NSNull) {
                if let list = appsValue as? [Any] {
                    for (index, app) in list.enumerated() {
                        guard let app = app as? [String: Any] else { continue }
                        for key in app.keys.sorted() where !appKeys.contains(key) { problems.append("apps[\(index)].\(key): unknown key") }
                    }
                } else {
                    problems.append("apps: expected a list of apps")
                }
            }
            guard problems.isEmpty else { throw Failure(problems: problems) }
            do {
                apps = try JSONDecoder().decode(AppsSection.self, from: data).apps
            } catch let error as DecodingError {
                throw Failure(problems: [ConfigurationLoader.describe(error)])
            }
            let settingsData = try JSONSerialization.data(withJSONObject: object)
            let snapshot: JSONSnapshot
            do {
                snapshot = try JSONSnapshot(
                    data: settingsData.bytes, providerName: "file",
                    parsingOptions: .init(secretsSpecifier: .specific(Set(ConfigurationSetting.all.filter(\.isSecret).map(\.key)))))
            } catch {
                throw Failure(problems: ["<file>: \(error)"])
            }
            layer = Layer(snapshot: snapshot, components: \.components, name: \.key, raw: { _ in nil })
        }

        private struct AppsSection: Decodable { var apps: [AppConfiguration]? }
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
        case .typeMismatch(let type, let context): return "\(path(context.codingPath)): expected \(jsonKind(type))"
        case .valueNotFound(let type, let context): return "\(path(context.codingPath)): expected \(jsonKind(type)), found null"
        case .dataCorrupted(let context):
            // Foundation names the Swift type an enumeration's raw value did not fit
            // ("Cannot initialize X from invalid String value y"): what the caller sent is what matters.
            let detail =
                context.debugDescription.hasPrefix("Cannot initialize ") && context.debugDescription.contains(" from invalid ")
                ? "not one of the allowed values" : context.debugDescription
            return "\(path(context.codingPath)): \(detail)"
        @unknown default: return "not valid"
        }
    }

    /// A Swift type as JSON calls it, so an error message speaks of the document the caller sent,
    /// never of this program's types.
    static func jsonKind(_ type: Any.Type) -> String {
        switch type {
        case is String.Type, is Substring.Type, is Character.Type: "a string"
        case is Bool.Type: "true or false"
        case is any BinaryInteger.Type: "an integer"
        case is any BinaryFloatingPoint.Type, is Decimal.Type: "a number"
        default:
            String(describing: type).hasPrefix("Array<") || String(describing: type).hasPrefix("Set<") ? "an array" : "an object"
        }
    }
}
