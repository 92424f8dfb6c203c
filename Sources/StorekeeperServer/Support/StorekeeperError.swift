import Foundation
public import HTTPTypes
public import Hummingbird
import Logging
import NIOCore
import StorekeeperCore

/// The one error type the HTTP API returns. `Code` is a struct, so codes can be added without
/// breaking callers; each code maps to exactly one HTTP status, here and nowhere else.
public struct StorekeeperError: Error, HTTPResponseError, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public let status: HTTPResponse.Status
        private init(_ name: String, _ status: HTTPResponse.Status) {
            self.name = name
            self.status = status
        }

        public static let invalidRequest = Code("invalid_request", .badRequest)
        public static let invalidJSON = Code("invalid_json", .badRequest)
        public static let invalidReceipt = Code("invalid_receipt", .badRequest)
        public static let receiptBundleMismatch = Code("receipt_bundle_mismatch", .unprocessableContent)
        public static let invalidSignedTransaction = Code("invalid_signed_transaction", .badRequest)
        /// A readable signed transaction that must not be granted; the message names the failure code.
        public static let signedTransactionRejected = Code("signed_transaction_rejected", .unprocessableContent)
        public static let appAccountTokenMismatch = Code("app_account_token_mismatch", .conflict)
        public static let invalidNotification = Code("invalid_notification", .badRequest)
        /// Not a compact JWS at all, where an app transaction was expected.
        public static let invalidAppTransaction = Code("invalid_app_transaction", .badRequest)
        /// A JWS that is not a verified app transaction of this app (chain, signature, bundle,
        /// environment, or another kind of payload).
        public static let appTransactionRejected = Code("app_transaction_rejected", .unprocessableContent)
        /// Signature, chain or claims of a notification failed; the message names the failure code.
        public static let notificationRejected = Code("notification_rejected", .forbidden)
        public static let unknownApp = Code("unknown_app", .unprocessableContent)
        public static let invalidAppUserId = Code("invalid_app_user_id", .badRequest)
        public static let invalidProduct = Code("invalid_product", .badRequest)
        public static let unknownEventType = Code("unknown_event_type", .badRequest)
        public static let invalidWebhook = Code("invalid_webhook", .badRequest)
        /// A webhook URL whose host is loopback, private, link-local, reserved or a numeric
        /// spelling of an address (docs/SECURITY.md).
        public static let webhookDestinationRefused = Code("webhook_destination_refused", .badRequest)
        public static let unauthorized = Code("unauthorized", .unauthorized)
        /// A client key with user tokens on, and no token.
        public static let userTokenRequired = Code("user_token_required", .unauthorized)
        /// A user token that is forged, expired, too long-lived or from another issuer.
        public static let invalidUserToken = Code("invalid_user_token", .unauthorized)
        /// A client key on a route only the app's backend (secret key) or an operator may use.
        public static let clientKeyNotAllowed = Code("client_key_not_allowed", .forbidden)
        /// A client acting for another user than the one it proved to be.
        public static let otherUser = Code("other_user", .forbidden)
        public static let rateLimited = Code("rate_limited", .tooManyRequests)
        public static let forbidden = Code("forbidden", .forbidden)
        public static let notFound = Code("not_found", .notFound)
        public static let methodNotAllowed = Code("method_not_allowed", .methodNotAllowed)
        public static let conflict = Code("conflict", .conflict)
        public static let payloadTooLarge = Code("payload_too_large", .contentTooLarge)
        public static let unsupportedMediaType = Code("unsupported_media_type", .unsupportedMediaType)
        public static let verificationBusy = Code("verification_in_progress", .conflict)
        public static let unavailable = Code("service_unavailable", .serviceUnavailable)
        /// The database refused a write or read (disk full, I/O error, locked beyond its timeout,
        /// unreachable): nothing was stored, so the client may send the same request again.
        public static let storageUnavailable = Code("storage_unavailable", .serviceUnavailable)
        /// The request line and headers together exceed what the server reads before a body.
        public static let headersTooLarge = Code("headers_too_large", .init(code: 431, reasonPhrase: "Request Header Fields Too Large"))
        /// The app has no In-App Purchase key, so the App Store Server API cannot be asked.
        public static let serverAPINotConfigured = Code("server_api_not_configured", .conflict)
        /// The app has no In-App Purchase key to sign offers with (`offerSigning` or `serverAPI`).
        public static let offerSigningNotConfigured = Code("offer_signing_not_configured", .conflict)
        /// The user may not take the offer (docs/OFFERS.md); the message names the reason.
        public static let offerNotEligible = Code("offer_not_eligible", .forbidden)
        /// A Retention Messaging request that is not the App Store's for this app, now (the message names the check).
        public static let retentionRequestRejected = Code("retention_request_rejected", .forbidden)
        /// The user's credit balance (the error's `balance`) is below the amount; nothing spent.
        public static let insufficientCredits = Code("insufficient_credits", .conflict)
        /// The `Idempotency-Key` was used before for another request; nothing done.
        public static let idempotencyKeyReused = Code("idempotency_key_reused", .conflict)
        /// Apple's Server API did not answer (down, rate limiting, refused our key).
        public static let appleUnavailable = Code("apple_unavailable", .badGateway)
        /// Apple refused what an operator asked it to do (the message carries Apple's error code).
        public static let appleRejected = Code("apple_rejected", .unprocessableContent)
        public static let internalError = Code("internal_error", .internalServerError)

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?
    /// Headers the answer must carry (`Allow` on a 405, `Retry-After` on a 503).
    public var headers: HTTPFields
    /// A number the caller acts on, beside `code` and `message` (`insufficient_credits`: the balance).
    public var balance: Int?

    /// Where the error was raised (`#fileID`, `#line`): in logs and `description`, never in an answer.
    public var file: String
    public var line: Int

    public init(
        _ code: Code, _ message: String, cause: (any Error)? = nil, headers: HTTPFields = [:], file: String = #fileID, line: Int = #line
    ) {
        self.code = code
        self.message = message
        self.cause = cause
        self.headers = headers
        self.file = file
        self.line = line
    }

    public var description: String {
        "\(code): \(message)" + (cause.map { " (cause: \($0))" } ?? "") + " [\(file):\(line)]"
    }

    public var status: HTTPResponse.Status { code.status }

    /// An action at Apple not done (`ActAtApple`), in the API's codes.
    init(_ error: AppleActionError) {
        let code: Code =
            switch error.kind {
            case .invalidRequest: .invalidRequest
            case .notFound: .notFound
            case .rejected: .appleRejected
            case .unavailable: .appleUnavailable
            }
        self.init(code, error.message, cause: error.cause)
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
        struct Body: Encodable {
            struct Inner: Encodable {
                var code: String
                var message: String
                var balance: Int?
            }
            var error: Inner
        }
        return (try? JSONEncoder().encode(Body(error: .init(code: code, message: message, balance: balance)))) ?? Data()
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
                    code: StorekeeperError.Code.methodNotAllowed.name,
                    message: "\(request.method.rawValue) is not allowed on this path; allowed: \(allow)", status: .methodNotAllowed,
                    headers: [.allow: allow])
            }
            let code: StorekeeperError.Code =
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
            code: StorekeeperError.Code.storageUnavailable.name, message: "the database cannot be used right now; nothing was stored, retry later",
            status: .serviceUnavailable, headers: [.retryAfter: String(StorageHealth.retryAfterSeconds)])
    }
}

extension StorekeeperError {
    /// 429 with `Retry-After`: the whole seconds until `until` (at least 1; a sliver of a
    /// millisecond past a whole second is not another second).
    static func tooManyAttempts(_ what: String, until: Date, now: Date) -> StorekeeperError {
        let seconds = max(1, Int((until.timeIntervalSince(now) - 0.001).rounded(.up)))
        return StorekeeperError(.rateLimited, "\(what); retry in \(seconds) s", headers: [.retryAfter: String(seconds)])
    }
}
