/// The error codes of the API's answers (`{"error":{"code","message"}}`), each with the one HTTP
/// status it is answered with: the server answers with these and the SDK reads them, from this one
/// list. Open: a code a newer server sends decodes too (its status unknown here, 0).
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    /// The HTTP status the server answers this code with (0: a code this list does not know).
    public let httpStatus: Int

    init(_ rawValue: String, status: Int) {
        self.rawValue = rawValue
        self.httpStatus = status
    }

    /// A code as it arrived: one of the list's with its status, or an unknown one.
    public init(rawValue: String) {
        self = Self.all.first { $0.rawValue == rawValue } ?? ErrorCode(rawValue, status: 0)
    }

    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static let invalidRequest = ErrorCode("invalid_request", status: 400)
    public static let invalidJSON = ErrorCode("invalid_json", status: 400)
    public static let invalidReceipt = ErrorCode("invalid_receipt", status: 400)
    public static let receiptBundleMismatch = ErrorCode("receipt_bundle_mismatch", status: 422)
    public static let invalidSignedTransaction = ErrorCode("invalid_signed_transaction", status: 400)
    /// A readable signed transaction that must not be granted; the message names the failure code.
    public static let signedTransactionRejected = ErrorCode("signed_transaction_rejected", status: 422)
    public static let appAccountTokenMismatch = ErrorCode("app_account_token_mismatch", status: 409)
    public static let invalidNotification = ErrorCode("invalid_notification", status: 400)
    /// Not a compact JWS at all, where an app transaction was expected.
    public static let invalidAppTransaction = ErrorCode("invalid_app_transaction", status: 400)
    /// A JWS that is not a verified app transaction of this app (chain, signature, bundle,
    /// environment, or another kind of payload).
    public static let appTransactionRejected = ErrorCode("app_transaction_rejected", status: 422)
    /// Signature, chain or claims of a notification failed; the message names the failure code.
    public static let notificationRejected = ErrorCode("notification_rejected", status: 403)
    public static let unknownApp = ErrorCode("unknown_app", status: 422)
    public static let invalidAppUserId = ErrorCode("invalid_app_user_id", status: 400)
    public static let invalidProduct = ErrorCode("invalid_product", status: 400)
    public static let unknownEventType = ErrorCode("unknown_event_type", status: 400)
    public static let invalidWebhook = ErrorCode("invalid_webhook", status: 400)
    /// A webhook URL whose host is loopback, private, link-local, reserved or a numeric
    /// spelling of an address (docs/SECURITY.md).
    public static let webhookDestinationRefused = ErrorCode("webhook_destination_refused", status: 400)
    public static let unauthorized = ErrorCode("unauthorized", status: 401)
    /// A client key with user tokens on, and no token.
    public static let userTokenRequired = ErrorCode("user_token_required", status: 401)
    /// A user token that is forged, expired, too long-lived or from another issuer.
    public static let invalidUserToken = ErrorCode("invalid_user_token", status: 401)
    /// A client key on a route only the app's backend (secret key) or an operator may use.
    public static let clientKeyNotAllowed = ErrorCode("client_key_not_allowed", status: 403)
    /// A client acting for another user than the one it proved to be.
    public static let otherUser = ErrorCode("other_user", status: 403)
    public static let rateLimited = ErrorCode("rate_limited", status: 429)
    public static let forbidden = ErrorCode("forbidden", status: 403)
    public static let notFound = ErrorCode("not_found", status: 404)
    public static let methodNotAllowed = ErrorCode("method_not_allowed", status: 405)
    public static let conflict = ErrorCode("conflict", status: 409)
    public static let payloadTooLarge = ErrorCode("payload_too_large", status: 413)
    public static let unsupportedMediaType = ErrorCode("unsupported_media_type", status: 415)
    public static let verificationBusy = ErrorCode("verification_in_progress", status: 409)
    public static let unavailable = ErrorCode("service_unavailable", status: 503)
    /// The database refused a write or read (disk full, I/O error, locked beyond its timeout,
    /// unreachable): nothing was stored, so the client may send the same request again.
    public static let storageUnavailable = ErrorCode("storage_unavailable", status: 503)
    /// The request line and headers together exceed what the server reads before a body.
    public static let headersTooLarge = ErrorCode("headers_too_large", status: 431)
    /// The app has no In-App Purchase key, so the App Store Server API cannot be asked.
    public static let serverAPINotConfigured = ErrorCode("server_api_not_configured", status: 409)
    /// The app has no In-App Purchase key to sign offers with (`offerSigning` or `serverAPI`).
    public static let offerSigningNotConfigured = ErrorCode("offer_signing_not_configured", status: 409)
    /// The user may not take the offer (docs/OFFERS.md); the message names the reason.
    public static let offerNotEligible = ErrorCode("offer_not_eligible", status: 403)
    /// A Retention Messaging request that is not the App Store's for this app, now (the message names the check).
    public static let retentionRequestRejected = ErrorCode("retention_request_rejected", status: 403)
    /// The user's credit balance (the error's `balance`) is below the amount; nothing spent.
    public static let insufficientCredits = ErrorCode("insufficient_credits", status: 409)
    /// The `Idempotency-Key` was used before for another request; nothing done.
    public static let idempotencyKeyReused = ErrorCode("idempotency_key_reused", status: 409)
    /// Apple's Server API did not answer (down, rate limiting, refused our key).
    public static let appleUnavailable = ErrorCode("apple_unavailable", status: 502)
    /// Apple refused what an operator asked it to do (the message carries Apple's error code).
    public static let appleRejected = ErrorCode("apple_rejected", status: 422)
    public static let internalError = ErrorCode("internal_error", status: 500)

    /// Every code the server answers with.
    public static let all: [ErrorCode] = [
        .invalidRequest,
        .invalidJSON,
        .invalidReceipt,
        .receiptBundleMismatch,
        .invalidSignedTransaction,
        .signedTransactionRejected,
        .appAccountTokenMismatch,
        .invalidNotification,
        .invalidAppTransaction,
        .appTransactionRejected,
        .notificationRejected,
        .unknownApp,
        .invalidAppUserId,
        .invalidProduct,
        .unknownEventType,
        .invalidWebhook,
        .webhookDestinationRefused,
        .unauthorized,
        .userTokenRequired,
        .invalidUserToken,
        .clientKeyNotAllowed,
        .otherUser,
        .rateLimited,
        .forbidden,
        .notFound,
        .methodNotAllowed,
        .conflict,
        .payloadTooLarge,
        .unsupportedMediaType,
        .verificationBusy,
        .unavailable,
        .storageUnavailable,
        .headersTooLarge,
        .serverAPINotConfigured,
        .offerSigningNotConfigured,
        .offerNotEligible,
        .retentionRequestRejected,
        .insufficientCredits,
        .idempotencyKeyReused,
        .appleUnavailable,
        .appleRejected,
        .internalError,
    ]
}
