import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

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
        public static let appAccountTokenMismatch = Code("app_account_token_mismatch", .unprocessableContent)
        public static let invalidNotification = Code("invalid_notification", .badRequest)
        /// Signature, chain or claims of a notification failed; the message names the failure code.
        public static let notificationRejected = Code("notification_rejected", .forbidden)
        public static let unknownApp = Code("unknown_app", .unprocessableContent)
        public static let invalidAppUserId = Code("invalid_app_user_id", .badRequest)
        public static let invalidProduct = Code("invalid_product", .badRequest)
        public static let unauthorized = Code("unauthorized", .unauthorized)
        public static let forbidden = Code("forbidden", .forbidden)
        public static let notFound = Code("not_found", .notFound)
        public static let methodNotAllowed = Code("method_not_allowed", .methodNotAllowed)
        public static let conflict = Code("conflict", .conflict)
        public static let payloadTooLarge = Code("payload_too_large", .contentTooLarge)
        public static let unsupportedMediaType = Code("unsupported_media_type", .unsupportedMediaType)
        public static let verificationBusy = Code("verification_in_progress", .conflict)
        public static let unavailable = Code("service_unavailable", .serviceUnavailable)
        /// The app has no In-App Purchase key, so the App Store Server API cannot be asked.
        public static let serverAPINotConfigured = Code("server_api_not_configured", .conflict)
        /// Apple's Server API did not answer (down, rate limiting, refused our key).
        public static let appleUnavailable = Code("apple_unavailable", .badGateway)
        public static let internalError = Code("internal_error", .internalServerError)

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        "\(code): \(message)" + (cause.map { " (cause: \($0))" } ?? "")
    }

    public var status: HTTPResponse.Status { code.status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        Self.errorResponse(code: code.name, message: message, status: code.status)
    }

    static func errorResponse(code: String, message: String, status: HTTPResponse.Status) -> Response {
        struct Body: Encodable {
            struct Inner: Encodable {
                var code: String
                var message: String
            }
            var error: Inner
        }
        let data = (try? JSONEncoder().encode(Body(error: .init(code: code, message: message)))) ?? Data()
        return Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Turns every error into `{"error":{"code","message"}}`: our own errors as they are, the
/// framework's (unknown route, body too large) into stable codes, anything else into a 500
/// whose details are logged, never sent.
struct ErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as StorekeeperError {
            if error.code == .internalError { context.logger.error("internal error", metadata: ["error": "\(error)"]) }
            return StorekeeperError.errorResponse(code: error.code.name, message: error.message, status: error.code.status)
        } catch let error as HTTPError {
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
            context.logger.error("unhandled error", metadata: ["error": "\(error)"])
            return StorekeeperError.errorResponse(code: "internal_error", message: "internal error", status: .internalServerError)
        }
    }
}
