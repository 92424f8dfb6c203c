public import AppStoreModels
public import Foundation
public import JobQueue
public import StorekeeperDomain

/// How Apple took a refund request's answer (Send Consumption Information).
public enum ConsumptionDelivery: Sendable, Hashable {
    /// Apple has it; `note` says how when it is worth keeping (` (v1)`: the v2 endpoint was missing).
    case taken(note: String)
    /// Apple did not answer or asked to wait (`reason`: why, `retryAfter`: Apple's own wait).
    case unavailable(reason: String, retryAfter: Date?)
    /// Apple refused it for good.
    case refused(String)
}

/// Send Consumption Information with one app's In-App Purchase key. The server's adapter sends
/// v2 and, where the environment has no v2 endpoint, the same answer in v1's terms.
public protocol AppleConsumptionAPI: Sendable {
    func send(_ answer: ConsumptionAnswer, transactionId: String, environment: AppStoreEnvironment) async -> ConsumptionDelivery
}

extension AnswerRefundRequests {
    /// How one run of a refund request's job ended.
    public enum Run: Sendable, Hashable {
        /// The request ended (`refusal`: Apple's, when it refused the answer).
        case ended(RefundRequest.State, refusal: String?)
        /// Apple did not take the answer: again at `at`, never past the request's deadline.
        case retry(at: Date, reason: String, transactionId: String)
    }

    /// Answers the request `jobId` stands for: decides (`prepare`), sends to Apple, and records
    /// how it ended. At least once: a runner that dies after Apple took the answer and before
    /// recording it sends it again, and Apple keeps the last. `apple` is nil for an app without
    /// an In-App Purchase key; `unitRandom` jitters the retry.
    public func run(
        jobId: String, attempt: Int, policy: (_ appId: String) -> RefundPolicy?, apple: (_ appId: String) -> (any AppleConsumptionAPI)?,
        retry: RetryPolicy, unitRandom: Double, now: @Sendable () -> Date
    ) async throws -> Run {
        let at = now()
        switch try await prepare(jobId: jobId, policy: policy, now: at) {
        case .done(let state):
            return .ended(state, refusal: nil)
        case .send(let request, let answer, let note):
            guard let apple = apple(request.appId) else {
                return .ended(try await failed(request, note: "server_api_not_configured", now: at), refusal: nil)
            }
            let environment: AppStoreEnvironment = request.environment == "sandbox" ? .sandbox : .production
            switch await apple.send(answer, transactionId: request.transactionId, environment: environment) {
            case .taken(let how):
                try await sent(request, answer: answer, note: note + how, now: now())
                return .ended(.sent, refusal: nil)
            case .unavailable(let reason, let retryAfter):
                let wait = retry.delay(afterAttempt: attempt, unitRandom: unitRandom)
                // Never past the deadline: the run at the deadline ends the request as expired.
                let next = min(max(retryAfter ?? at.addingTimeInterval(wait), at), request.deadline)
                return .retry(at: next, reason: reason, transactionId: request.transactionId)
            case .refused(let why):
                return .ended(try await failed(request, note: why, now: now()), refusal: why)
            }
        }
    }
}
