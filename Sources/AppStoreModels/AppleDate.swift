public import Foundation

/// Milliseconds since 1970 as Apple sends them, possibly fractional.
public struct AppleDate: Codable, Hashable, Sendable, Comparable {
    public var milliseconds: Double
    public init(milliseconds: Double) { self.milliseconds = milliseconds }
    public init(_ date: Date) { milliseconds = date.timeIntervalSince1970 * 1000 }
    public var date: Date { Date(timeIntervalSince1970: milliseconds / 1000) }

    public init(from decoder: any Decoder) throws {
        milliseconds = try decoder.singleValueContainer().decode(Double.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }

    public static func < (a: AppleDate, b: AppleDate) -> Bool { a.milliseconds < b.milliseconds }
}
