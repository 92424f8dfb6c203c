public import Foundation
import Hummingbird
import NIOCore
import Persistence
import StorekeeperErrors
import StorekeeperWire

/// One JSON dialect for the whole API: ISO 8601 dates with milliseconds, sorted keys.
public enum StorekeeperJSON {
    static let style = WireJSON.style
    static let plainStyle = WireJSON.plainStyle

    /// The wire form events are stored in (`WireJSON`): a webhook posts the stored bytes.
    public static func makeEncoder() -> JSONEncoder { WireJSON.makeEncoder() }

    public static func makeDecoder() -> JSONDecoder { WireJSON.makeDecoder() }

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
            // Corrupt at the root: either the bytes are not JSON at all, or (Foundation reports it
            // there too) a number does not fit its field, 1.5 where an integer goes.
            guard (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil else {
                throw StorekeeperError(.invalidJSON, "request body is not valid JSON")
            }
            throw StorekeeperError(.invalidRequest, "a number does not fit its field (a fraction where an integer goes, or out of range)")
        } catch let error as DecodingError {
            throw StorekeeperError(.invalidRequest, ConfigurationLoader.describe(error))
        }
    }
}
