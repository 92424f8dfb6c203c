import AppStoreModels
public import StorekeeperWire

/// Why a verification is invalid, held or retrying, as stored in `reason`, shown by the API and
/// used as a metric label. A string-backed value: stored rows and codes derived from Apple's
/// data may hold values not listed here, and those are kept as read. Encodes as a bare string.
public struct FailureReason: RawStringValue, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    /// Tests and stored fixtures name reasons as they are written in rows and JSON.
    public init(stringLiteral value: String) { self.rawValue = value }

    // MARK: - Local checks (decided before or without Apple)

    /// The receipt's PKCS#7 signature does not verify: forged or altered, so Apple is never asked.
    public static let receiptSignatureInvalid = FailureReason(rawValue: "receipt_signature_invalid")
    /// The receipt is signed, but not by a chain rooted in a trusted root (Apple's or a configured extra).
    public static let receiptChainUntrusted = FailureReason(rawValue: "receipt_chain_untrusted")
    /// The stored text is not a compact JWS at all, so there is nothing to verify.
    public static let invalidSignedTransaction = FailureReason(rawValue: "invalid_signed_transaction")
    /// The JWS header names an algorithm other than ES256, the only one Apple signs with.
    public static let jwsUnsupportedAlgorithm = FailureReason(rawValue: "jws_unsupported_algorithm")
    /// The JWS carries no x5c chain, or not Apple's leaf + intermediate + root.
    public static let jwsMissingCertificateChain = FailureReason(rawValue: "jws_missing_certificate_chain")
    /// The JWS signature does not verify with the leaf's key: forged or altered.
    public static let jwsSignatureInvalid = FailureReason(rawValue: "jws_signature_invalid")
    /// The JWS chain does not lead to a trusted root, or a certificate was not valid (or revoked) at the time checked.
    public static let jwsChainUntrusted = FailureReason(rawValue: "jws_chain_untrusted")
    /// The signed data belongs to another app: its bundle id is not this app's.
    public static let jwsWrongBundleId = FailureReason(rawValue: "jws_wrong_bundle_id")
    /// The signed data comes from an environment that is never granted (Xcode, local testing).
    public static let jwsWrongEnvironment = FailureReason(rawValue: "jws_wrong_environment")
    /// The signed data names another app's Apple id than the one expected.
    public static let jwsWrongAppAppleId = FailureReason(rawValue: "jws_wrong_app_apple_id")
    /// A verified JWS whose payload is not a transaction, or lacks a field needed to grant it.
    public static let jwsNotATransaction = FailureReason(rawValue: "jws_not_a_transaction")
    /// A verified V2 notification that carries no signed transaction, so there is nothing to grant.
    public static let notificationWithoutTransaction = FailureReason(rawValue: "notification_without_transaction")
    /// Signed renewal info that cannot be read or decoded, so the subscription's facts cannot be trusted.
    public static let invalidRenewalInfo = FailureReason(rawValue: "invalid_renewal_info")

    /// Another app user submitted one of the purchases earlier and their verification has not
    /// ended: this one waits for it (ownership by acceptance order).
    public static let earlierClaimPending = FailureReason(rawValue: "earlier_claim_pending")

    // MARK: - Apple's answer (verifyReceipt)

    /// Apple did not answer within the attempt timeout; retried.
    public static let appleTimeout = FailureReason(rawValue: "apple_timeout")
    /// No connection to Apple could be made (DNS, TCP, TLS); retried.
    public static let appleUnreachable = FailureReason(rawValue: "apple_unreachable")
    /// Apple answered HTTP 429; retried later.
    public static let appleRateLimited = FailureReason(rawValue: "apple_rate_limited")
    /// Apple (or a load balancer in front) answered 200 with a body that is not verifyReceipt JSON; retried.
    public static let appleUnparseableBody = FailureReason(rawValue: "apple_unparseable_body")
    /// Apple's status 21002: the receipt data is malformed and will never verify.
    public static let receiptMalformed = FailureReason(rawValue: "receipt_malformed")
    /// Apple's status 21003: Apple could not authenticate the receipt.
    public static let receiptNotAuthentic = FailureReason(rawValue: "receipt_not_authentic")
    /// Apple's status 21010: the user account was not found or deleted, so the receipt cannot verify.
    public static let appleAccountNotFound = FailureReason(rawValue: "apple_account_not_found")
    /// Apple's status 21005: its receipt server is temporarily unavailable; retried.
    public static let appleReceiptServerUnavailable = FailureReason(rawValue: "apple_receipt_server_unavailable")
    /// Apple's status 21009: an internal data access error on Apple's side; retried.
    public static let appleInternalDataAccessError = FailureReason(rawValue: "apple_internal_data_access_error")
    /// Apple kept redirecting between production and sandbox (21007/21008) past the hop limit; retried.
    public static let appleEnvironmentLoop = FailureReason(rawValue: "apple_environment_loop")
    /// Apple's status 21100-21199 with `is-retryable` true: an internal error Apple says may pass; retried.
    public static let appleInternalErrorRetryable = FailureReason(rawValue: "apple_internal_error_retryable")
    /// Apple's status 21100-21199 without `is-retryable`: Apple says retrying will not help.
    public static let appleInternalError = FailureReason(rawValue: "apple_internal_error")
    /// A status Apple has not documented: retried rather than lose a purchase.
    public static let appleUnknownStatus = FailureReason(rawValue: "apple_unknown_status")
    /// The loop that calls Apple ran no attempt (only if the hop limit were 0); the initial value, retried.
    public static let appleNotCalled = FailureReason(rawValue: "apple_not_called")
    /// Apple's endpoint is down (many calls in a row failed): this verification waits for the
    /// probe's answer without calling, and without spending an attempt.
    public static let appleDown = FailureReason(rawValue: "apple_down")

    /// Apple answered with a non-200 HTTP status other than 429 (e.g. `apple_http_503`); retried.
    public static func appleHTTP(_ status: Int) -> FailureReason {
        FailureReason(rawValue: "apple_http_\(status)")
    }

    // MARK: - Grant rules (Apple vouched, but it is not ours to grant)

    /// Apple's verified answer carries no `receipt`, so nothing can be matched to the app or granted.
    public static let appleResponseMissingReceipt = FailureReason(rawValue: "apple_response_missing_receipt")
    /// Apple verified a receipt of another app: its bundle id is not this app's.
    public static let bundleIdMismatch = FailureReason(rawValue: "bundle_id_mismatch")
    /// The purchase is from the sandbox and this app does not accept sandbox purchases.
    public static let sandboxNotAccepted = FailureReason(rawValue: "sandbox_not_accepted")

    // MARK: - Configuration (held until the configuration changes)

    /// Apple's status 21004: the app's shared secret is wrong or missing.
    public static let sharedSecretMismatch = FailureReason(rawValue: "shared_secret_mismatch")
    /// Apple's status 21000: Apple could not read our request, so its shape or content is wrong.
    public static let appleCouldNotReadRequest = FailureReason(rawValue: "apple_could_not_read_request")
    /// The verification's app is no longer in the configuration.
    public static let appNotConfigured = FailureReason(rawValue: "app_not_configured")
    /// A Server API refresh was queued for an app without an In-App Purchase key (`serverAPI`).
    public static let serverAPINotConfigured = FailureReason(rawValue: "server_api_not_configured")

    // MARK: - Server API (App Store Server API)

    /// Apple's Server API knows no transaction for the ids asked about, so nothing can be granted.
    public static let serverAPINoTransactions = FailureReason(rawValue: "server_api_no_transactions")
    /// Apple's Server API answered with an error body that retrying will not change.
    public static let serverAPIAPIError = FailureReason(rawValue: "server_api_api_error")
    /// Apple's Server API refused our token even when fresh (wrong key, issuer or bundle id); held.
    public static let serverAPIUnauthorized = FailureReason(rawValue: "server_api_unauthorized")
    /// Apple's Server API kept answering 429 beyond what the client waits; retried.
    public static let serverAPIRateLimited = FailureReason(rawValue: "server_api_rate_limited")
    /// Apple's Server API answered 5xx, timed out or could not be reached through every attempt; retried.
    public static let serverAPIUnavailable = FailureReason(rawValue: "server_api_unavailable")
    /// Apple's Server API answered 2xx with a body that is not the documented JSON.
    public static let serverAPIMalformedResponse = FailureReason(rawValue: "server_api_malformed_response")

    /// A Server API call failed with `code` (a `ServerAPIError.Code` raw value, e.g. `unauthorized`).
    public static func serverAPI(_ code: String) -> FailureReason {
        FailureReason(rawValue: "server_api_\(code)")
    }

    // MARK: - Storage and job

    /// Reading or writing the database failed during a run; the job is retried (job `last_error` only).
    public static let storageError = FailureReason(rawValue: "storage_error")
    /// The job's verification row no longer exists, so there is none to record it on (job `last_error`, `GrantResult`).
    public static let verificationMissing = FailureReason(rawValue: "verification_missing")
    /// A stopping process gave the job back before it finished; not a failure, the attempt is not counted.
    public static let releasedAtShutdown = FailureReason(rawValue: "released_at_shutdown")
    /// A retry was scheduled with no reason given (fallback for the job's `last_error`).
    public static let retry = FailureReason(rawValue: "retry")
    /// A verification was held for configuration with no reason given (fallback for the job's `last_error`).
    public static let configurationError = FailureReason(rawValue: "configuration_error")

    /// Every fixed reason above; `appleHTTP(_:)` and `serverAPI(_:)` build further values.
    public static let all: [FailureReason] = [
        .earlierClaimPending,
        .receiptSignatureInvalid, .receiptChainUntrusted, .invalidSignedTransaction, .jwsUnsupportedAlgorithm,
        .jwsMissingCertificateChain, .jwsSignatureInvalid, .jwsChainUntrusted, .jwsWrongBundleId, .jwsWrongEnvironment,
        .jwsWrongAppAppleId, .jwsNotATransaction, .notificationWithoutTransaction, .invalidRenewalInfo,
        .appleTimeout, .appleUnreachable, .appleRateLimited, .appleUnparseableBody, .receiptMalformed, .receiptNotAuthentic,
        .appleAccountNotFound, .appleReceiptServerUnavailable, .appleInternalDataAccessError, .appleEnvironmentLoop,
        .appleInternalErrorRetryable, .appleInternalError, .appleUnknownStatus, .appleNotCalled, .appleDown,
        .appleResponseMissingReceipt, .bundleIdMismatch, .sandboxNotAccepted,
        .sharedSecretMismatch, .appleCouldNotReadRequest, .appNotConfigured, .serverAPINotConfigured,
        .serverAPINoTransactions, .serverAPIAPIError, .serverAPIUnauthorized, .serverAPIRateLimited, .serverAPIUnavailable,
        .serverAPIMalformedResponse,
        .storageError, .verificationMissing, .releasedAtShutdown, .retry, .configurationError,
    ]
}
