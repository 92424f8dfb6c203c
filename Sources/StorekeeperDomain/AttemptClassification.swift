public import AppStoreModels
import Foundation

/// What one verifyReceipt answer means for a verification. Pure: decided from the call
/// result alone, so every Apple status has a test.
public enum AttemptClassification: Sendable, Hashable {
    /// Apple vouched for the receipt (status 0, or 21006 for an expired iOS 6 subscription).
    case verified(VerifyReceiptResponse)
    /// Apple says it must be sent to the other environment.
    case redirect(to: AppStoreEnvironment, status: AppStoreStatus)
    /// The receipt will never verify: forged, malformed, account gone.
    case invalid(reason: FailureReason, status: AppStoreStatus?)
    /// Our configuration is wrong (shared secret, request shape): keep it, retry after a fix.
    case configurationError(reason: FailureReason, status: AppStoreStatus)
    /// Apple could not answer now: retry later, never give up.
    case transient(reason: FailureReason, status: AppStoreStatus?)

    public static func classify(_ result: VerifyReceiptCallResult, environment: AppStoreEnvironment) -> AttemptClassification {
        switch result {
        case .timedOut:
            return .transient(reason: .appleTimeout, status: nil)
        case .connectionFailed:
            return .transient(reason: .appleUnreachable, status: nil)
        case .answered(let httpStatus, let body):
            if httpStatus == 429 { return .transient(reason: .appleRateLimited, status: nil) }
            guard httpStatus == 200 else { return .transient(reason: .appleHTTP(httpStatus), status: nil) }
            guard let response = try? JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(body)) else {
                // Load balancers answer 200 with an HTML page when Apple is down.
                return .transient(reason: .appleUnparseableBody, status: nil)
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
            return .invalid(reason: .receiptMalformed, status: status)
        case .notAuthenticated:
            return .invalid(reason: .receiptNotAuthentic, status: status)
        case .accountNotFound:
            return .invalid(reason: .appleAccountNotFound, status: status)
        case .unreadableJSON:
            return .configurationError(reason: .appleCouldNotReadRequest, status: status)
        case .sharedSecretMismatch:
            return .configurationError(reason: .sharedSecretMismatch, status: status)
        case .serverUnavailable:
            return .transient(reason: .appleReceiptServerUnavailable, status: status)
        case .internalDataAccessError:
            return .transient(reason: .appleInternalDataAccessError, status: status)
        case .sandboxReceiptInProduction, .productionReceiptInSandbox:
            // Redirect already handled above; reaching here means a loop (21007 from sandbox).
            return .transient(reason: .appleEnvironmentLoop, status: status)
        default:
            if status.isInternalDataAccessRange {
                if response.isRetryable?.bool == true {
                    return .transient(reason: .appleInternalErrorRetryable, status: status)
                }
                return .invalid(reason: .appleInternalError, status: status)
            }
            // A status Apple has not documented: keep trying rather than lose a purchase.
            return .transient(reason: .appleUnknownStatus, status: status)
        }
    }
}

extension AttemptClassification {
    /// The status Apple's answer carried, if it carried one.
    public var appleStatus: AppStoreStatus? {
        switch self {
        case .verified(let response): return response.status
        case .redirect(_, let status): return status
        case .invalid(_, let status), .transient(_, let status): return status
        case .configurationError(_, let status): return status
        }
    }
}
