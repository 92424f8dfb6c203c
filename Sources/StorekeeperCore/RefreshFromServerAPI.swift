public import AppStoreModels
public import Foundation
public import JobQueue
import Persistence
public import StorekeeperDomain

/// A customer's history from the App Store Server API, verified and shaped as one answer for the
/// grant planner. The server's adapter is `ServerAPIHistory`; a call that fails throws
/// `AppleCallFailure`.
public protocol AppleHistoryFetching: Sendable {
    func fetch(transactionIds: [String], now: Date) async throws -> AppleHistoryOutcome
}

public enum AppleHistoryOutcome: Sendable {
    case verified(PurchaseEvidence, environment: AppStoreEnvironment)
    /// Apple answered, but what it signed cannot be granted.
    case rejected(reason: FailureReason, message: String)
}

/// A call to Apple that did not get an answer to act on.
public struct AppleCallFailure: Error, Sendable, CustomStringConvertible {
    /// Stable, for the verification's reason and the metrics (`unavailable`, `rate_limited`, …).
    public var code: String
    /// Worth trying again later (Apple down, rate limiting).
    public var isTransient: Bool
    /// Apple's own wait, when it gave one.
    public var retryAfter: Date?
    /// Whether the failure still shows Apple up (an error of Apple's own: a 4xx, a refused
    /// token, a rate limit) rather than unreachable (no connection, a 5xx, an unreadable body).
    public var appleAnswered: Bool
    /// Apple refused the app's key: nothing will work until the configuration changes.
    public var credentialsRefused: Bool

    public init(code: String, isTransient: Bool, retryAfter: Date?, appleAnswered: Bool, credentialsRefused: Bool) {
        self.code = code
        self.isTransient = isTransient
        self.retryAfter = retryAfter
        self.appleAnswered = appleAnswered
        self.credentialsRefused = credentialsRefused
    }

    public var description: String { code }
}

/// Apple's health for one endpoint as this process's workers share it (`AppleHealth`): while it
/// is down, only a probe calls it; the others wait without spending an attempt.
public protocol AppleAvailability: Sendable {
    func admitting(now: Date) async -> AppleHealth.Admission
    func record(answered: Bool, probe: Bool, sentAt: Date, now: Date) async
    /// The wait before the next attempt after a failed call sent at `sentAt`: none when Apple
    /// came back meanwhile, round the probe while it is down, else `scheduled`.
    func delayAfterFailure(sentAt: Date, scheduled: TimeInterval, now: Date, unitRandom: Double) async -> TimeInterval
    /// Since when the endpoint has been down in this process; nil while it is not.
    func downSince() -> Date?
}

/// Refreshes one subscriber from the App Store Server API (an operator's refresh, or the stand-in
/// for a receipt): the history of each of their original transactions and the renewal info of
/// their subscriptions, verified, then granted through the same planner and exactly-once keys as
/// everything else (the job handler grants what `.grant` carries). Apple unavailable or
/// rate-limiting: retried on the job's schedule, after Apple's Retry-After when it gave one;
/// while the Server API is down only a probe calls it; a refused key holds the verification until
/// the configuration changes.
public struct RefreshFromServerAPI: Sendable {
    public enum Step: Sendable {
        /// Verified: grant it in the transaction that completes the job.
        case grant(PurchaseEvidence, environment: AppStoreEnvironment)
        /// Ended, held or rescheduled here; `outcome` names it for the metrics (nil: not counted).
        case ended(outcome: String?)
    }

    let outcomes: VerificationOutcomes

    public init(outcomes: VerificationOutcomes) {
        self.outcomes = outcomes
    }

    /// `history` nil: the app has no Server API key. `unitRandom` jitters the waits.
    public func callAsFunction(
        _ lease: JobLease, verificationId: String, transactionIds: [String], configurationFingerprint: String,
        history: (any AppleHistoryFetching)?, health: (any AppleAvailability)?, retry: RetryPolicy, probeCapSeconds: Double,
        unitRandom: @Sendable () -> Double, now: @Sendable () -> Date
    ) async throws -> Step {
        let at = now()
        guard let history else {
            let report = AttemptReport(statuses: [], environment: nil, reason: .serverAPINotConfigured)
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verificationId, report: report, configurationFingerprint: configurationFingerprint, now: at)
            return .ended(outcome: nil)
        }
        let admission = await health?.admitting(now: at) ?? .call
        if case .wait(let until) = admission {
            let next = max(until, at).addingTimeInterval(probeCapSeconds * unitRandom())
            let report = AttemptReport(statuses: [], environment: nil, reason: .appleDown)
            _ = try await outcomes.scheduleRetry(lease, verificationId: verificationId, report: report, at: next, countsAttempt: false, now: at)
            return .ended(outcome: "apple_down")
        }
        let probe = if case .probe = admission { true } else { false }
        let fetched: Result<AppleHistoryOutcome, any Error>
        do {
            fetched = .success(try await history.fetch(transactionIds: transactionIds, now: at))
        } catch {
            fetched = .failure(error)
        }
        if let health {
            let answered = if case .failure(let error) = fetched { (error as? AppleCallFailure)?.appleAnswered ?? true } else { true }
            await health.record(answered: answered, probe: probe, sentAt: at, now: now())
        }
        do {
            switch try fetched.get() {
            case .verified(let evidence, let environment):
                return .grant(evidence, environment: environment)
            case .rejected(let reason, _):
                let report = AttemptReport(statuses: [], environment: nil, reason: reason)
                _ = try await outcomes.finishInvalid(lease, verificationId: verificationId, report: report, now: at)
                return .ended(outcome: "invalid")
            }
        } catch let failure as AppleCallFailure where failure.isTransient {
            // Apple came back while this call was out: it goes now, like the released ones;
            // Apple down: back round the probe.
            let scheduled = retry.delay(afterAttempt: lease.attempt, unitRandom: unitRandom())
            let delay = await health?.delayAfterFailure(sentAt: at, scheduled: scheduled, now: now(), unitRandom: unitRandom()) ?? scheduled
            let backoff = at.addingTimeInterval(delay)
            let report = AttemptReport(statuses: [], environment: nil, reason: .serverAPI(failure.code))
            _ = try await outcomes.scheduleRetry(
                lease, verificationId: verificationId, report: report, at: max(backoff, failure.retryAfter ?? backoff), now: at)
            return .ended(outcome: "retry")
        } catch let failure as AppleCallFailure {
            let report = AttemptReport(statuses: [], environment: nil, reason: .serverAPI(failure.code))
            if failure.credentialsRefused {
                _ = try await outcomes.holdForConfiguration(
                    lease, verificationId: verificationId, report: report, configurationFingerprint: configurationFingerprint, now: at)
            } else {
                _ = try await outcomes.finishInvalid(lease, verificationId: verificationId, report: report, now: at)
            }
            return .ended(outcome: failure.code)
        }
    }
}
