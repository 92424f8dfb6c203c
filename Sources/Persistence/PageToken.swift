public import Foundation

/// A page's end as a cursor: a position's parts joined by `.`, the first a whole number of
/// milliseconds, the last free to hold anything (dots too) but empty. Positions are keysets (the
/// values a listing is ordered by), so a page starts after the last one read however many rows
/// were added meanwhile, which an offset would not; and any text of that shape is a position,
/// so docs/openapi.yaml states the whole of what is accepted as a pattern.
public enum PageToken {
    public static func make(_ parts: [String]) -> String { parts.joined(separator: ".") }

    /// The `count` parts of `token`; nil unless the first is 1-15 digits and none is empty. A
    /// line break anywhere is refused, as the document's pattern (`.` in ECMA-262) refuses it.
    public static func parts(_ token: String, count: Int) -> [String]? {
        let breaks: Set<Unicode.Scalar> = ["\n", "\r", "\u{2028}", "\u{2029}"]
        guard token.utf8.count <= 1_024, !token.unicodeScalars.contains(where: breaks.contains) else { return nil }
        let parts = token.split(separator: ".", maxSplits: count - 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == count, parts.allSatisfy({ !$0.isEmpty }), (1...15).contains(parts[0].utf8.count),
            parts[0].utf8.allSatisfy({ (0x30...0x39).contains($0) })
        else { return nil }
        return parts
    }
}

/// Where a delivery stands in an endpoint's list, newest first: when it was created, and its id.
public struct DeliveryPosition: Sendable, Hashable {
    public var createdAt: Date
    public var id: String

    public init(createdAt: Date, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    public var token: String { PageToken.make([String(StoredTime.ms(createdAt)), id]) }

    public init?(token: String) {
        guard let parts = PageToken.parts(token, count: 2), let ms = Int64(parts[0]) else { return nil }
        self.init(createdAt: StoredTime.date(ms), id: parts[1])
    }
}
