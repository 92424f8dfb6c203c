import Foundation
import StorekeeperWire
import Yams

/// docs/openapi.yaml, read with Yams, and a checker for the subset of JSON Schema (2020-12, as
/// OpenAPI 3.1 uses it) the document writes (`assertions`), with the `date-time` and `uuid`
/// formats. A keyword it does not know fails the check rather than passing
/// unread, so the document cannot outgrow the checker silently.
struct APIDocument {
    let root: [String: Any]

    static func load() throws -> APIDocument {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/openapi.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        guard let root = try Yams.load(yaml: text).flatMap(normalized) as? [String: Any] else { throw Unreadable(what: "the document") }
        return APIDocument(root: root)
    }

    struct Unreadable: Error, CustomStringConvertible {
        var what: String
        var description: String { "cannot read \(what)" }
    }

    /// Mappings with `String` keys (Yams keys a `200:` as an `Int`), all the way down.
    private static func normalized(_ value: Any) -> Any {
        if let mapping = value as? [AnyHashable: Any] {
            return Dictionary(uniqueKeysWithValues: mapping.map { ("\($0.key.base)", normalized($0.value)) })
        }
        if let sequence = value as? [Any] { return sequence.map(normalized) }
        return value
    }

    /// The schema at a message's location.
    func schema(at location: WireLocation) throws -> Any {
        switch location {
        case .schema(let name):
            return try resolve("#/components/schemas/\(name)")
        case .request(let method, let path):
            return try lookup(["paths", path, method, "requestBody", "content", "application/json", "schema"], for: location)
        case .answer(let method, let path, let status):
            return try lookup(["paths", path, method, "responses", String(status), "content", "application/json", "schema"], for: location)
        }
    }

    private func lookup(_ keys: [String], for location: WireLocation) throws -> Any {
        var node: Any = root
        for key in keys {
            guard let next = (node as? [String: Any])?[key] else { throw Unreadable(what: "\(location) (no '\(key)')") }
            node = next
        }
        return node
    }

    func resolve(_ reference: String) throws -> Any {
        guard reference.hasPrefix("#/") else { throw Unreadable(what: "reference \(reference)") }
        var node: Any = root
        for key in reference.dropFirst(2).split(separator: "/") {
            guard let next = (node as? [String: Any])?[String(key)] else { throw Unreadable(what: "reference \(reference)") }
            node = next
        }
        return node
    }

    /// Every way `value` breaks `schema`, each with its JSON path; empty when it conforms.
    func problems(_ value: JSONInstance, against schema: Any, at path: String = "$") -> [String] {
        if let allowed = schema as? Bool { return allowed ? [] : ["\(path): no value is allowed here"] }
        guard let schema = schema as? [String: Any] else { return ["\(path): the schema is not a mapping"] }
        var found: [String] = []
        for (keyword, argument) in schema.sorted(by: { $0.key < $1.key }) {
            found += check(keyword, argument, value, schema: schema, at: path)
        }
        return found
    }

    /// Keywords that say nothing about the value.
    private static let annotations: Set<String> = ["description", "title", "examples", "example", "default", "deprecated", "readOnly", "writeOnly"]
    /// Keywords `check` reads.
    static let assertions: Set<String> = [
        "$ref", "allOf", "anyOf", "oneOf", "if", "then", "else", "type", "enum", "const", "properties", "additionalProperties", "required",
        "maxProperties", "minProperties", "propertyNames", "items", "minItems", "maxItems", "uniqueItems", "minLength", "maxLength", "pattern",
        "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    ]

    /// Every keyword in the document's schemas (components, request bodies, answers, parameters)
    /// that is neither an assertion the checker reads nor an annotation, with where it is. A
    /// description with a comma inside a YAML flow mapping splits into such a key.
    func unknownKeywords() -> [String] {
        var found: [String] = []
        func schema(_ node: Any, _ path: String) {
            guard let mapping = node as? [String: Any] else { return }
            for (key, value) in mapping.sorted(by: { $0.key < $1.key }) {
                if !Self.assertions.contains(key), !Self.annotations.contains(key), !key.hasPrefix("x-") { found.append("\(path)/\(key)") }
                switch key {
                case "properties": (value as? [String: Any] ?? [:]).forEach { schema($0.value, "\(path)/properties/\($0.key)") }
                case "items", "additionalProperties", "propertyNames", "if", "then", "else": schema(value, "\(path)/\(key)")
                case "allOf", "anyOf", "oneOf": (value as? [Any] ?? []).enumerated().forEach { schema($0.element, "\(path)/\(key)/\($0.offset)") }
                default: break
                }
            }
        }
        func outside(_ node: Any, _ path: String) {
            if let mapping = node as? [String: Any] {
                for (key, value) in mapping {
                    if key == "schema" || path.hasSuffix("/components/schemas") {
                        schema(value, "\(path)/\(key)")
                    } else {
                        outside(value, "\(path)/\(key)")
                    }
                }
            } else if let sequence = node as? [Any] {
                sequence.enumerated().forEach { outside($0.element, "\(path)/\($0.offset)") }
            }
        }
        outside(root, "")
        return found.sorted()
    }

    private func check(_ keyword: String, _ argument: Any, _ value: JSONInstance, schema: [String: Any], at path: String) -> [String] {
        if Self.annotations.contains(keyword) || keyword.hasPrefix("x-") { return [] }
        switch keyword {
        case "$ref":
            guard let reference = argument as? String, let target = try? resolve(reference) else { return ["\(path): unresolvable $ref"] }
            return problems(value, against: target, at: path)
        case "allOf":
            return (argument as? [Any] ?? []).flatMap { problems(value, against: $0, at: path) }
        case "if":
            let branch = problems(value, against: argument, at: path).isEmpty ? schema["then"] : schema["else"]
            return branch.map { problems(value, against: $0, at: path) } ?? []
        case "then", "else":
            return []
        case "anyOf":
            let branches = argument as? [Any] ?? []
            return branches.contains { problems(value, against: $0, at: path).isEmpty }
                ? [] : ["\(path): matches none of anyOf's \(branches.count) schemas"]
        case "oneOf":
            let matching = (argument as? [Any] ?? []).filter { problems(value, against: $0, at: path).isEmpty }.count
            return matching == 1 ? [] : ["\(path): matches \(matching) of oneOf's schemas, not exactly one"]
        case "type":
            let names = (argument as? [String]) ?? [(argument as? String) ?? "?"]
            return value.types.isDisjoint(with: names) ? ["\(path): \(value) is not \(names.joined(separator: " or "))"] : []
        case "enum":
            return (argument as? [Any] ?? []).contains { value.equals(yaml: $0) } ? [] : ["\(path): \(value) is not in the enum"]
        case "const":
            return value.equals(yaml: argument) ? [] : ["\(path): \(value) is not the constant"]
        case "properties", "additionalProperties", "required", "maxProperties", "minProperties", "propertyNames":
            guard case .object(let fields) = value else { return [] }
            return objectProblems(keyword, argument, fields, schema: schema, at: path)
        case "items", "minItems", "maxItems", "uniqueItems":
            guard case .array(let items) = value else { return [] }
            switch keyword {
            case "uniqueItems":
                let distinct = items.enumerated().allSatisfy { index, item in !items[..<index].contains(item) }
                return (argument as? Bool ?? false) && !distinct ? ["\(path): items repeat"] : []
            case "items": return items.enumerated().flatMap { problems($0.element, against: argument, at: "\(path)[\($0.offset)]") }
            case "minItems": return items.count >= (argument as? Int ?? 0) ? [] : ["\(path): fewer than \(argument) items"]
            default: return items.count <= (argument as? Int ?? .max) ? [] : ["\(path): more than \(argument) items"]
            }
        case "minLength", "maxLength", "pattern", "format":
            guard case .string(let text) = value else { return [] }
            return stringProblems(keyword, argument, text, at: path)
        case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
            let number: Double? =
                switch value {
                case .integer(let n): Double(n)
                case .number(let n): n
                default: nil
                }
            guard let number, let bound = (argument as? Int).map(Double.init) ?? (argument as? Double) else { return [] }
            let within =
                switch keyword {
                case "minimum": number >= bound
                case "maximum": number <= bound
                case "exclusiveMinimum": number > bound
                default: number < bound
                }
            return within ? [] : ["\(path): \(number) is outside its \(keyword) \(bound)"]
        default:
            return ["\(path): the checker does not know the keyword '\(keyword)'"]
        }
    }

    private func objectProblems(
        _ keyword: String, _ argument: Any, _ fields: [String: JSONInstance], schema: [String: Any], at path: String
    ) -> [String] {
        switch keyword {
        case "properties":
            let properties = argument as? [String: Any] ?? [:]
            return fields.sorted { $0.key < $1.key }.flatMap { name, field in
                properties[name].map { problems(field, against: $0, at: "\(path).\(name)") } ?? []
            }
        case "required":
            return (argument as? [String] ?? []).filter { fields[$0] == nil }.map { "\(path): the required '\($0)' is missing" }
        case "additionalProperties":
            let declared = Set((schema["properties"] as? [String: Any] ?? [:]).keys)
            return fields.sorted { $0.key < $1.key }.filter { !declared.contains($0.key) }.flatMap { name, field in
                if let allowed = argument as? Bool { return allowed ? [] : ["\(path): '\(name)' is not a declared property"] }
                return problems(field, against: argument, at: "\(path).\(name)")
            }
        case "maxProperties":
            return fields.count <= (argument as? Int ?? .max) ? [] : ["\(path): more than \(argument) properties"]
        case "propertyNames":
            return fields.keys.sorted().flatMap { problems(.string($0), against: argument, at: "\(path) key '\($0)'") }
        default:
            return fields.count >= (argument as? Int ?? 0) ? [] : ["\(path): fewer than \(argument) properties"]
        }
    }

    private func stringProblems(_ keyword: String, _ argument: Any, _ text: String, at path: String) -> [String] {
        switch keyword {
        case "minLength": return text.unicodeScalars.count >= (argument as? Int ?? 0) ? [] : ["\(path): shorter than \(argument)"]
        case "maxLength": return text.unicodeScalars.count <= (argument as? Int ?? .max) ? [] : ["\(path): longer than \(argument)"]
        case "pattern":
            guard let pattern = argument as? String, let expression = try? NSRegularExpression(pattern: pattern) else {
                return ["\(path): an unreadable pattern"]
            }
            let range = NSRange(text.startIndex..., in: text)
            return expression.firstMatch(in: text, range: range) == nil ? ["\(path): \"\(text.prefix(40))\" does not match \(pattern)"] : []
        default:
            switch argument as? String {
            case "date-time":
                let date = (try? WireJSON.style.parse(text)) ?? (try? WireJSON.plainStyle.parse(text))
                return date == nil ? ["\(path): not a date-time"] : []
            case "uuid": return UUID(uuidString: text) == nil ? ["\(path): not a UUID"] : []
            default: return []
            }
        }
    }
}
