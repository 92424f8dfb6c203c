import AppStoreClient
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Answers one refund request: sends what `AnswerRefundRequests` decided to Apple's Send
/// Consumption Information v2 and records it. Apple unavailable or rate-limiting: retried with
/// backoff (from Retry-After when Apple gave one), never later than the request's deadline, at
/// which the request expires unanswered. At least once: a runner that dies after Apple took the
/// answer and before recording it sends it again, and Apple keeps the last.
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
        let at = now()
        do {
            switch try await answers.prepare(jobId: lease.jobId, policy: { apps[$0]?.refundRequests }, now: at) {
            case .done(let state):
                count(state)
                return .completed
            case .send(let request, let answer, let note):
                return try await send(request, answer: answer, note: note, client: clients[request.appId], attempt: lease.attempt, at: at)
            }
        } catch {
            logger.error("a refund request could not be read or recorded", metadata: ["job": "\(lease.jobId)", "error": "\(error)"])
            return .retry(at: at.addingTimeInterval(5), reason: FailureReason.storageError.rawValue)
        }
    }

    private func send(
        _ request: RefundRequest, answer: ConsumptionAnswer, note: String, client: AppStoreServerAPIClient?, attempt: Int, at: Date
    ) async throws -> JobOutcome {
        guard let client else {
            count(try await answers.failed(request, note: "server_api_not_configured", now: at))
            return .completed
        }
        let body = ConsumptionRequestV2(
            customerConsented: answer.customerConsented, sampleContentProvided: answer.sampleContentProvided,
            deliveryStatus: answer.deliveryStatus, consumptionPercentage: answer.consumptionPercentage,
            refundPreference: answer.refundPreference)
        let environment: AppStoreEnvironment = request.environment == "sandbox" ? .sandbox : .production
        var note = note
        do {
            do {
                try await client.sendConsumptionInformation(request.transactionId, body, in: .only(environment))
            } catch let error as ServerAPIError where error.code == .apiError && error.httpStatus == 404 && error.apiErrorCode == nil {
                // No v2 endpoint there (a 404 that is not one of Apple's errors): the same answer as v1.
                try await client.sendConsumptionInformation(request.transactionId, Self.v1(answer), environment: environment)
                note += " (v1)"
            }
        } catch let error as ServerAPIError where error.isTransient {
            let wait = retry.delay(afterAttempt: attempt, unitRandom: Double.random(in: 0...1))
            // Never past the deadline: the run at the deadline ends the request as expired.
            let next = min(max(error.retryAfter ?? at.addingTimeInterval(wait), at), request.deadline)
            metrics.increment(Metric.refundRequestsTotal, labels: ["outcome": "retry"])
            logger.warning(
                "Apple did not take a refund request's answer; trying again",
                metadata: ["transaction": "\(request.transactionId)", "error": "\(error)", "next": "\(next)"])
            return .retry(at: next, reason: error.code.rawValue)
        } catch {
            logger.error("Apple refused a refund request's answer", metadata: ["transaction": "\(request.transactionId)", "error": "\(error)"])
            count(try await answers.failed(request, note: "\(error)", now: now()))
            return .completed
        }
        try await answers.sent(request, answer: answer, note: note, now: now())
        count(.sent)
        return .completed
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

    private func count(_ state: RefundRequest.State) {
        metrics.increment(Metric.refundRequestsTotal, labels: ["outcome": state.rawValue])
    }
}
