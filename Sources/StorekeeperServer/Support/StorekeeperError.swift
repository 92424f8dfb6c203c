import Foundation
public import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import StorekeeperCore
public import StorekeeperErrors
public import StorekeeperWire

/// The errors the HTTP API answers with: `CodedError` over the wire module's `ErrorCode` (an open
/// set shared with the SDK), each code answered with exactly one HTTP status (`status` below is
/// the only place a code becomes the HTTP layer's). What an answer carries beside the code and
/// message travels as the cause: `RetryAfter` (a 429's `Retry-After`) and `CreditBalance` (the
/// `balance` of `insufficient_credits`).
public typealias StorekeeperError = CodedError<ErrorCode>

/// The cause of a refusal the caller may try again after `seconds`: the answer's `Retry-After`.
public struct RetryAfter: Error, Sendable, CustomStringConvertible {
    public var seconds: Int
    public var description: String { "retry after \(seconds) s" }
}

/// The cause of `insufficient_credits`: the user's balance, which the answer states.
public struct CreditBalance: Error, Sendable, CustomStringConvertible {
    public var balance: Int
    public var description: String { "balance \(balance)" }
}

extension CodedError: ResponseGenerator, HTTPResponseError where Code == ErrorCode {
    public var status: HTTPResponse.Status { code.status }

    /// `Retry-After` for a refusal whose cause says when.
    public var headers: HTTPFields {
        guard let wait = cause as? RetryAfter else { return [:] }
        return [.retryAfter: String(wait.seconds)]
    }

    /// `insufficient_credits`: the balance the answer states.
    public var balance: Int? { (cause as? CreditBalance)?.balance }

    /// An action at Apple not done (`ActAtApple`), in the API's codes, raised where it was.
    init(_ error: AppleActionError) {
        let code: Code =
            switch error.code {
            case .invalidRequest: .invalidRequest
            case .notFound: .notFound
            case .rejected: .appleRejected
            case .unavailable: .appleUnavailable
            }
        self.init(code, error.message, cause: error.cause, file: error.file, line: error.line)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Self.errorResponse(code: code.name, message: message, status: code.status, headers: headers, balance: balance)
    }

    static func errorResponse(
        code: String, message: String, status: HTTPResponse.Status, headers: HTTPFields = [:], balance: Int? = nil
    ) -> Response {
        var fields = headers
        fields[.contentType] = "application/json"
        return Response(
            status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: errorBody(code: code, message: message, balance: balance))))
    }

    /// `{"error":{"code","message"}}`, also written by the channel handler that answers requests
    /// the HTTP parser refused before any route saw them.
    static func errorBody(code: String, message: String, balance: Int? = nil) -> Data {
        (try? JSONEncoder().encode(ErrorBody(code: ErrorCode(rawValue: code), message: message, balance: balance))) ?? Data()
    }
}

/// Turns every error into `{"error":{"code","message"}}`: our own errors as they are, the
/// framework's (unknown route, body too large) into stable codes, a database that cannot be
/// used right now into 503 `storage_unavailable` with `Retry-After` (nothing was stored, so the
/// same request may be sent again), anything else into a 500 whose details are logged, never sent.
struct ErrorMiddleware: RouterMiddleware {
    typealias Context = StorekeeperRequestContext
    let health: StorageHealth
    let now: @Sendable () -> Date
    /// Tells a wrong method on a known path (405) from an unknown path (404).
    let routes: KnownRoutes
    let metrics: MetricsRegistry
    /// Whose `X-Forwarded-For` names the client (`StorekeeperConfiguration.trustedProxies`).
    let trustedProxies: [IPNetwork]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        let forwarded = HTTPField.Name(ClientAddress.forwardedForHeader).map { request.headers[values: $0] } ?? []
        context.source = ClientAddress.resolve(peer: context.remoteAddress?.ipAddress, forwardedFor: forwarded, trusted: trustedProxies)
        return try await answer(request, context: context, next: next)
    }

    private func answer(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            let response: Response
            do {
                response = try await next(request, context)
            } catch let error as AppleActionError {
                throw StorekeeperError(error)
            }
            if request.method != .get, request.method != .head, (200..<300).contains(response.status.code) { health.succeeded() }
            return response
        } catch let error as StorekeeperError {
            if let cause = error.cause, StorageBackend.isUnavailable(cause) { return storageUnavailable(cause, context: context) }
            if error.code == .internalError { context.logger.error("internal error", metadata: ["error": "\(error)"]) }
            if [401, 403, 429].contains(error.code.status.code) {
                // Refusals by route (its pattern, never the ids in the path) and code: a flood of
                // bad tokens, or users locked out, shows here before anyone writes to support.
                metrics.increment(
                    Metric.httpRefusalsTotal,
                    labels: ["route": context.endpointPath ?? "unmatched", "status": String(error.code.status.code), "code": error.code.name])
            }
            return StorekeeperError.errorResponse(
                code: error.code.name, message: error.message, status: error.code.status, headers: error.headers, balance: error.balance)
        } catch let error as HTTPError {
            if error.status == .notFound, let allowed = routes.allowedMethods(path: request.uri.path) {
                let allow = allowed.joined(separator: ", ")
                return StorekeeperError.errorResponse(
                    code: ErrorCode.methodNotAllowed.name,
                    message: "\(request.method.rawValue) is not allowed on this path; allowed: \(allow)", status: .methodNotAllowed,
                    headers: [.allow: allow])
            }
            let code: ErrorCode =
                switch error.status {
                case .notFound: .notFound
                case .methodNotAllowed: .methodNotAllowed
                case .contentTooLarge: .payloadTooLarge
                case .unauthorized: .unauthorized
                case .unsupportedMediaType: .unsupportedMediaType
                default: error.status.code < 500 ? .invalidRequest : .internalError
                }
            return StorekeeperError.errorResponse(code: code.name, message: error.body ?? error.status.reasonPhrase, status: code.status)
        } catch {
            if StorageBackend.isUnavailable(error) { return storageUnavailable(error, context: context) }
            context.logger.error("unhandled error", metadata: ["error": "\(error)"])
            return StorekeeperError.errorResponse(code: "internal_error", message: "internal error", status: .internalServerError)
        }
    }

    private func storageUnavailable(_ error: any Error, context: Context) -> Response {
        let wasHealthy = health.failure == nil
        health.failed(error, now: now())
        if wasHealthy { context.logger.error("storage unavailable", metadata: ["error": "\(error)"]) }
        return StorekeeperError.errorResponse(
            code: ErrorCode.storageUnavailable.name, message: "the database cannot be used right now; nothing was stored, retry later",
            status: .serviceUnavailable, headers: [.retryAfter: String(StorageHealth.retryAfterSeconds)])
    }
}

extension CodedError where Code == ErrorCode {
    /// 429 with `Retry-After`: the whole seconds until `until` (at least 1; a sliver of a
    /// millisecond past a whole second is not another second).
    static func tooManyAttempts(_ what: String, until: Date, now: Date, file: String = #fileID, line: Int = #line) -> StorekeeperError {
        let seconds = max(1, Int((until.timeIntervalSince(now) - 0.001).rounded(.up)))
        return StorekeeperError(.rateLimited, "\(what); retry in \(seconds) s", cause: RetryAfter(seconds: seconds), file: file, line: line)
    }
}

extension ErrorCode {
    public var name: String { rawValue }

    /// The code's status as the HTTP layer writes it, with its reason phrase. A code this server
    /// does not answer with (none reaches here) would be a 500.
    public var status: HTTPResponse.Status {
        switch httpStatus {
        case 400: .badRequest
        case 401: .unauthorized
        case 403: .forbidden
        case 404: .notFound
        case 405: .methodNotAllowed
        case 409: .conflict
        case 413: .contentTooLarge
        case 415: .unsupportedMediaType
        case 422: .unprocessableContent
        case 429: .tooManyRequests
        case 431: HTTPResponse.Status(code: 431, reasonPhrase: "Request Header Fields Too Large")
        case 502: .badGateway
        case 503: .serviceUnavailable
        default: .internalServerError
        }
    }
}
