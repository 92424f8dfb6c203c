import Foundation
import Hummingbird
import NIOCore

/// One JSON dialect for the whole API: ISO 8601 dates with milliseconds, sorted keys.
public enum StorekeeperJSON {
    /// A value type from FoundationEssentials: no ICU formatter is built per date.
    static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    static let plainStyle = Date.ISO8601FormatStyle()

    public static func makeEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(style.format(date))
        }
        return encoder
    }

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

    static func response<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let data = try makeEncoder().encode(value)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// Decodes a request body, turning every decoding failure into a 400 that names the field.
    static func decode<T: Decodable>(_ type: T.Type, from buffer: ByteBuffer) throws -> T {
        let data = Data(buffer.readableBytesView)
        do {
            return try makeDecoder().decode(type, from: data)
        } catch DecodingError.dataCorrupted(let context) where context.codingPath.isEmpty {
            // Corrupt at the root means the bytes are not JSON at all.
            throw StorekeeperError(.invalidJSON, "request body is not valid JSON")
        } catch let error as DecodingError {
            throw StorekeeperError(.invalidRequest, ConfigurationLoader.describe(error))
        }
    }
}
