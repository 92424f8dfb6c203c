public import AppStoreModels
public import AsyncHTTPClient
public import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// Where the two verifyReceipt endpoints live. Apple's by default; the simulator's in tests.
public struct VerifyReceiptEndpoints: Sendable, Hashable, Codable {
    public var production: String
    public var sandbox: String

    public init(production: String, sandbox: String) {
        self.production = production
        self.sandbox = sandbox
    }

    public static let apple = VerifyReceiptEndpoints(
        production: "https://buy.itunes.apple.com/verifyReceipt",
        sandbox: "https://sandbox.itunes.apple.com/verifyReceipt")

    public func url(for environment: AppStoreEnvironment) -> String {
        environment == .sandbox ? sandbox : production
    }
}

/// One verifyReceipt POST. It never throws and never interprets Apple's status: it reports what
/// happened on the wire, and `AttemptClassification` decides what that means.
public struct VerifyReceiptClient: Sendable {
    /// Bodies above this size are not Apple's answer (Apple's are well under a megabyte per receipt).
    public static let maximumResponseBytes = 16 * 1024 * 1024

    private let httpClient: HTTPClient
    public let endpoints: VerifyReceiptEndpoints

    public init(httpClient: HTTPClient, endpoints: VerifyReceiptEndpoints) {
        self.httpClient = httpClient
        self.endpoints = endpoints
    }

    public func verify(
        _ request: VerifyReceiptRequest, environment: AppStoreEnvironment, timeout: TimeInterval
    ) async -> VerifyReceiptCallResult {
        await withSpan("apple.verify_receipt", ofKind: .client) { span in
            span.attributes["apple.environment"] = environment.rawValue
            let result = await call(request, environment: environment, timeout: timeout)
            switch result {
            case .answered(let status, _): span.attributes["http.response.status_code"] = status
            case .timedOut: span.setStatus(SpanStatus(code: .error, message: "timeout"))
            case .connectionFailed(let why): span.setStatus(SpanStatus(code: .error, message: why))
            }
            return result
        }
    }

    private func call(
        _ request: VerifyReceiptRequest, environment: AppStoreEnvironment, timeout: TimeInterval
    ) async -> VerifyReceiptCallResult {
        let body: Data
        do {
            body = try JSONEncoder().encode(request)
        } catch {
            return .connectionFailed("could not encode request: \(error)")
        }
        var http = HTTPClientRequest(url: endpoints.url(for: environment))
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/json")
        http.headers.add(name: "Accept", value: "application/json")
        http.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await httpClient.execute(http, timeout: .milliseconds(Int64(timeout * 1000)))
            let bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
            return .answered(httpStatus: Int(response.status.code), body: Array(buffer: bytes))
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout
            || error == .connectTimeout
        {
            return .timedOut
        } catch {
            return .connectionFailed(String(describing: error))
        }
    }
}
