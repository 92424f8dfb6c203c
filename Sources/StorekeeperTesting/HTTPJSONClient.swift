public import AsyncHTTPClient
public import Foundation
import NIOCore
public import NIOHTTP1
import StorekeeperServer

/// A tiny JSON-over-HTTP client for tests and benchmarks: real sockets, real HTTP.
public struct HTTPJSONClient: Sendable {
    public struct Reply: Sendable {
        public var status: Int
        public var body: Data
        public var headers: [String: String]
        /// Every `Set-Cookie` header, in order (`headers` keeps only the last of a repeated name).
        public var setCookies: [String] = []

        /// The body as a JSON object (empty when it is not one).
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
        public var text: String { String(decoding: body, as: UTF8.self) }
        /// `error.code` of an error reply.
        public var errorCode: String? { (json["error"] as? [String: Any])?["code"] as? String }

        public func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try StorekeeperJSON.makeDecoder().decode(type, from: body)
        }
    }

    public let httpClient: HTTPClient
    public let baseURL: String

    public init(httpClient: HTTPClient, baseURL: String) {
        self.httpClient = httpClient
        self.baseURL = baseURL
    }

    public func send(
        _ method: HTTPMethod, _ path: String, headers: [String: String] = [:], body: Data? = nil, timeout: TimeInterval = TestWait.seconds + 60
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            if !headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
                request.headers.add(name: "Content-Type", value: "application/json")
            }
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await httpClient.execute(request, timeout: .milliseconds(Int64(timeout * 1000)))
        let bytes = try await response.body.collect(upTo: 64 * 1024 * 1024)
        var headerMap: [String: String] = [:]
        for header in response.headers { headerMap[header.name.lowercased()] = header.value }
        return Reply(
            status: Int(response.status.code), body: Data(bytes.readableBytesView), headers: headerMap,
            setCookies: response.headers["set-cookie"])
    }

    public func send<T: Encodable>(_ method: HTTPMethod, _ path: String, headers: [String: String] = [:], json: T) async throws -> Reply {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        return try await send(method, path, headers: headers, body: try encoder.encode(json))
    }
}
