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
    /// By app id: Apple's Send Consumption Information with the app's key.
    let senders: [String: ConsumptionSender]
    let apps: [String: AppConfiguration]
    var retry = RetryPolicy(base: 30, cap: 1_800)
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func run(_ lease: JobLease) async -> JobOutcome {
        do {
            let run = try await answers.run(
                jobId: lease.jobId, attempt: lease.attempt, policy: { apps[$0]?.refundRequests },
                apple: { senders[$0] }, retry: retry, unitRandom: Double.random(in: 0...1), now: now)
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
