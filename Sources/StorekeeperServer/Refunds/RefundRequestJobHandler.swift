import AppStoreClient
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Runs one refund request's job (`AnswerRefundRequests.run`: decide, send to Apple, record);
/// only the job's outcome, the count and the log are here. Apple unavailable or rate-limiting:
/// retried with backoff (from Retry-After when Apple gave one), never later than the request's
/// deadline, at which the request expires unanswered.
struct RefundRequestJobHandler: JobHandler {
    let kind = answerRefundRequestJobKind
    let answers: AnswerRefundRequests
    let clients: [String: AppStoreServerAPIClient]
    let apps: [String: AppConfiguration]
    var retry = RetryPolicy(base: 30, cap: 1_800)
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func run(_ lease: JobLease) async -> JobOutcome {
        do {
            let run = try await answers.run(
                jobId: lease.jobId, attempt: lease.attempt, policy: { apps[$0]?.refundRequests },
                apple: { clients[$0].map(ConsumptionSender.init(client:)) }, retry: retry, unitRandom: Double.random(in: 0...1), now: now)
            switch run {
            case .ended(let state, let refusal):
                if let refusal {
                    logger.error("Apple refused a refund request's answer", metadata: ["job": "\(lease.jobId)", "error": "\(refusal)"])
                }
                count(state)
                return .completed
            case .retry(let at, let reason, let transactionId):
                metrics.increment(Metric.refundRequestsTotal, labels: ["outcome": "retry"])
                logger.warning(
                    "Apple did not take a refund request's answer; trying again",
                    metadata: ["transaction": "\(transactionId)", "reason": "\(reason)", "next": "\(at)"])
                return .retry(at: at, reason: reason)
            }
        } catch {
            logger.error("a refund request could not be read or recorded", metadata: ["job": "\(lease.jobId)", "error": "\(error)"])
            return .retry(at: now().addingTimeInterval(5), reason: FailureReason.storageError.rawValue)
        }
    }

    private func count(_ state: RefundRequest.State) {
        metrics.increment(Metric.refundRequestsTotal, labels: ["outcome": state.rawValue])
    }
}

/// `AnswerRefundRequests`' port to Apple over the app's `AppStoreServerAPIClient`: v2, and where
/// the environment has no v2 endpoint (a 404 that is not one of Apple's errors) the same answer
/// in v1's terms.
struct ConsumptionSender: AppleConsumptionAPI {
    let client: AppStoreServerAPIClient

    func send(_ answer: ConsumptionAnswer, transactionId: String, environment: AppStoreEnvironment) async -> ConsumptionDelivery {
        let body = ConsumptionRequestV2(
            customerConsented: answer.customerConsented, sampleContentProvided: answer.sampleContentProvided,
            deliveryStatus: answer.deliveryStatus, consumptionPercentage: answer.consumptionPercentage,
            refundPreference: answer.refundPreference)
        do {
            do {
                try await client.sendConsumptionInformation(transactionId, body, in: .only(environment))
                return .taken(note: "")
            } catch let error as ServerAPIError where error.code == .apiError && error.httpStatus == 404 && error.apiErrorCode == nil {
                try await client.sendConsumptionInformation(transactionId, Self.v1(answer), environment: environment)
                return .taken(note: " (v1)")
            }
        } catch let error as ServerAPIError where error.isTransient {
            return .unavailable(reason: error.code.rawValue, retryAfter: error.retryAfter)
        } catch {
            return .refused("\(error)")
        }
    }

    /// The answer in Send Consumption Information v1's terms: what v2 says, and "undeclared" (0)
    /// for what v1 asks beyond it (tenure, play time, lifetime spend, account status).
    static func v1(_ answer: ConsumptionAnswer) -> ConsumptionRequest {
        let consumption: Int
        switch answer.consumptionPercentage {
        case nil: consumption = 0
        case 0?: consumption = 1
        case 100_000?: consumption = 3
        default: consumption = 2
        }
        let delivery =
            ["DELIVERED": 0, "UNDELIVERED_QUALITY_ISSUE": 1, "UNDELIVERED_WRONG_ITEM": 2, "UNDELIVERED_SERVER_OUTAGE": 3][answer.deliveryStatus] ?? 5
        let preference: Int =
            switch answer.refundPreference {
            case "GRANT_FULL", "GRANT_PRORATED": 1
            case "DECLINE": 2
            case nil: 0
            default: 3
            }
        return ConsumptionRequest(
            customerConsented: answer.customerConsented, consumptionStatus: consumption, platform: 1,
            sampleContentProvided: answer.sampleContentProvided, deliveryStatus: delivery, refundPreference: preference)
    }

}
