/// A string-backed value whose unknown values are kept as sent: Apple adds environments, types
/// and statuses over time, and a newer server adds states an older app must still decode.
/// Encodes and decodes as a bare JSON string.
public protocol RawStringValue: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible
where RawValue == String {
    init(rawValue: String)
}

extension RawStringValue {
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}
