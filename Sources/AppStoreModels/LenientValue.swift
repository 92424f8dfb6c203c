public import Foundation

/// Apple sends the same field as a string in one response and a number in the next
/// (`"quantity": "1"` versus `"quantity": 1`, booleans as `"true"` or `"1"`).
/// This keeps the text Apple sent, whatever its JSON type, so nothing is lost on decode.
public struct LenientString: Codable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var value: String

    public init(_ value: String) { self.value = value }
    public init(stringLiteral value: String) { self.value = value }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let string = try? container.decode(String.self) {
            value = string
        } else if let int = try? container.decode(Int64.self) {
            value = String(int)
        } else if let bool = try? container.decode(Bool.self) {
            value = bool ? "true" : "false"
        } else if let double = try? container.decode(Double.self) {
            value = String(double)
        } else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "expected a string, number or boolean")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }

    /// Milliseconds since 1970 as Apple writes them in `*_date_ms` fields.
    public var millisecondsDate: Date? {
        guard let ms = Int64(value.trimmingCharacters(in: .whitespaces)) else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    public var int: Int? { Int(value.trimmingCharacters(in: .whitespaces)) }

    /// Apple's booleans: "true"/"false" in receipts, "1"/"0" in renewal info.
    public var bool: Bool? {
        switch value.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default: return nil
        }
    }

    public static func milliseconds(_ date: Date) -> LenientString {
        LenientString(String(Int64((date.timeIntervalSince1970 * 1000).rounded())))
    }
}
