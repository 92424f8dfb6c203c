import AppStoreModels
import Foundation

/// What one verifyReceipt answer means for a verification. Pure: decided from the call
/// result alone, so every Apple status has a test.
public enum AttemptClassification: Sendable, Hashable {
    /// Apple vouched for the receipt (status 0, or 21006 for an expired iOS 6 subscription).
    case verified(VerifyReceiptResponse)
    /// Apple says it must be sent to the other environment.
    case redirect(to: AppStoreEnvironment, status: AppStoreStatus)
    /// The receipt will never verify: forged, malformed, account gone.
    case invalid(reason: String, status: AppStoreStatus?)
    /// Our configuration is wrong (shared secret, request shape): keep it, retry after a fix.
    case configurationError(reason: String, status: AppStoreStatus)
    /// Apple could not answer now: retry later, never give up.
    case transient(reason: String, status: AppStoreStatus?)

    public static func classify(_ result: VerifyReceiptCallResult, environment: AppStoreEnvironment) -> AttemptClassification {
        switch result {
        case .timedOut:
            return .transient(reason: "apple_timeout", status: nil)
        case .connectionFailed:
            return .transient(reason: "apple_unreachable", status: nil)
        case .answered(let httpStatus, let body):
            if httpStatus == 429 { return .transient(reason: "apple_rate_limited", status: nil) }
            if (500...599).contains(httpStatus) { return .transient(reason: "apple_http_\(httpStatus)", status: nil) }
            guard httpStatus == 200 else { return .transient(reason: "apple_http_\(httpStatus)", status: nil) }
            guard let response = try? JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(body)) else {
                // Load balancers answer 200 with an HTML page when Apple is down.
                return .transient(reason: "apple_unparseable_body", status: nil)
            }
            return classify(response, environment: environment)
        }
    }

    public static func classify(_ response: VerifyReceiptResponse, environment: AppStoreEnvironment) -> AttemptClassification {
        let status = response.status
        if let next = AppStoreRouting.redirect(after: status, from: environment) {
            return .redirect(to: next, status: status)
        }
        switch status {
        case .valid, .subscriptionExpired:
            return .verified(response)
        case .malformedReceipt:
            return .invalid(reason: "receipt_malformed", status: status)
        case .notAuthenticated:
            return .invalid(reason: "receipt_not_authentic", status: status)
        case .accountNotFound:
            return .invalid(reason: "apple_account_not_found", status: status)
        case .unreadableJSON:
            return .configurationError(reason: "apple_could_not_read_request", status: status)
        case .sharedSecretMismatch:
            return .configurationError(reason: "shared_secret_mismatch", status: status)
        case .serverUnavailable:
            return .transient(reason: "apple_receipt_server_unavailable", status: status)
        case .internalDataAccessError:
            return .transient(reason: "apple_internal_data_access_error", status: status)
        case .sandboxReceiptInProduction, .productionReceiptInSandbox:
            // Redirect already handled above; reaching here means a loop (21007 from sandbox).
            return .transient(reason: "apple_environment_loop", status: status)
        default:
            if status.isInternalDataAccessRange {
                if response.isRetryable?.bool == true {
                    return .transient(reason: "apple_internal_error_retryable", status: status)
                }
                return .invalid(reason: "apple_internal_error", status: status)
            }
            // A status Apple has not documented: keep trying rather than lose a purchase.
            return .transient(reason: "apple_unknown_status", status: status)
        }
    }
}
