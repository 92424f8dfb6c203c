import Foundation

/// A JSON value as the wire carries it, read with `JSONDecoder` so that `true` and `1` stay apart
/// (`JSONSerialization` hands both back as `NSNumber`).
indirect enum JSONInstance: Decodable, Equatable, CustomStringConvertible {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONInstance])
    case object([String: JSONInstance])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONInstance].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONInstance].self))
        }
    }

    /// The JSON Schema type names this value satisfies (an integer is a number too).
    var types: Set<String> {
        switch self {
        case .null: ["null"]
        case .bool: ["boolean"]
        case .integer: ["integer", "number"]
        case .number(let value): value.rounded() == value ? ["integer", "number"] : ["number"]
        case .string: ["string"]
        case .array: ["array"]
        case .object: ["object"]
        }
    }

    var description: String {
        switch self {
        case .null: "null"
        case .bool(let value): "\(value)"
        case .integer(let value): "\(value)"
        case .number(let value): "\(value)"
        case .string(let value): "\"\(value.prefix(40))\""
        case .array(let items): "[\(items.count) items]"
        case .object(let fields): "{\(fields.keys.sorted().joined(separator: ", "))}"
        }
    }

    /// Whether a YAML scalar of an `enum` or `const` (as Yams reads it) is this value.
    func equals(yaml: Any) -> Bool {
        switch (self, yaml) {
        case (.string(let a), let b as String): a == b
        case (.integer(let a), let b as Int): a == Int64(b)
        case (.number(let a), let b as Double): a == b
        case (.bool(let a), let b as Bool): a == b
        case (.null, is NSNull): true
        default: false
        }
    }
}
