public import Foundation

/// The API's JSON dialect (ISO 8601 dates with milliseconds, sorted keys): the server writes
/// with it, the SDK reads with it, and a storage adapter stores an event in the very form it is
/// sent in, so a webhook delivery posts the stored bytes with no decode and encode per delivery
/// (they were a tenth of a delivery's CPU, docs/BENCHMARKS.md).
public enum WireJSON {
    /// A value type from FoundationEssentials: no ICU formatter is built per date.
    public static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    public static let plainStyle = Date.ISO8601FormatStyle()

    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        // `/` as is: a secret or URL copied from an answer must be the value, not `\/`.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(format(date))
        }
        return encoder
    }

    /// ISO 8601 with exactly the millisecond the date stands for. A `Date` holds Apple's
    /// milliseconds as a `Double` offset from 2001, which may fall a hair below the instant
    /// (…44.4719999): a formatter that truncates then prints .471 where the ledger, which rounds,
    /// has .472. Rounded to the millisecond once, here, every output says the same instant.
    public static func format(_ date: Date) -> String {
        let ms = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let seconds = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000)
        let fraction = Int(ms - seconds * 1000)
        // Whole seconds are exact in a `Date`, so the plain format of them is exact too.
        let whole = plainStyle.format(Date(timeIntervalSince1970: Double(seconds)))
        let digits = String(fraction)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// ISO 8601 dates, with or without fractional seconds.
    public static func makeDecoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let c = try decoder.singleValueContainer()
            let text = try c.decode(String.self)
            if let date = (try? style.parse(text)) ?? (try? plainStyle.parse(text)) { return date }
            throw DecodingError.dataCorruptedError(in: c, debugDescription: "'\(text)' is not an ISO 8601 date")
        }
        return decoder
    }

    public static func encode<T: Encodable>(_ value: T) -> String {
        String(decoding: (try? makeEncoder().encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    public static func decode<T: Decodable>(_ type: T.Type, _ text: String?) -> T? {
        guard let text else { return nil }
        return try? makeDecoder().decode(type, from: Data(text.utf8))
    }
}
