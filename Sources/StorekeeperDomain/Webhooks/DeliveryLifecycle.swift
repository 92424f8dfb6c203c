public import Foundation

/// When a failed delivery is tried again. Exponential from seconds to hours, with jitter so a
/// receiver coming back is not hit by every delivery at once, for at least `maximumAge` (three
/// days by default) from the first attempt; then the delivery is dead-lettered.
public struct WebhookRetrySchedule: Codable, Hashable, Sendable {
    /// Seconds to wait after attempt 1, 2, …; the last one repeats.
    public var delays: [Double]
    /// Attempts go on while the first is younger than this; then the delivery is dead.
    public var maximumAge: Double
    /// Each delay is scaled by a factor drawn from 1 ± `jitter`.
    public var jitter: Double
    /// The longest `Retry-After` honoured (a receiver asking for a week gets this).
    public var maximumRetryAfter: Double

    public init(delays: [Double], maximumAge: Double, jitter: Double = 0.2, maximumRetryAfter: Double = 86_400) {
        self.delays = delays
        self.maximumAge = maximumAge
        self.jitter = jitter
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// 5 s, 30 s, 2 min, 10 min, 30 min, 1 h, 2 h, 4 h, 8 h, then every 8 h, for three days:
    /// about 17 attempts before a delivery is dead (docs/EVENTS.md).
    public static let standard = WebhookRetrySchedule(
        delays: [5, 30, 120, 600, 1_800, 3_600, 7_200, 14_400, 28_800], maximumAge: 3 * 86_400)

    /// The wait after attempt `attempt` (1-based); `unitRandom` in 0..<1 picks the jitter.
    public func delay(afterAttempt attempt: Int, unitRandom: Double) -> Double {
        guard let last = delays.last else { return 0 }
        let base = attempt - 1 < delays.count ? delays[max(0, attempt - 1)] : last
        return base * (1 - jitter + 2 * jitter * unitRandom)
    }
}

/// What one attempt found.
public enum DeliveryOutcome: Sendable, Hashable {
    /// A 2xx answer.
    case delivered(status: Int)
    /// Any other answer, or none (`status` nil: timeout, refused, redirect not followed).
    /// `retryAfter`: the receiver's `Retry-After`, in seconds.
    case failed(status: Int?, retryAfter: Double?)
    /// 410 Gone: the receiver says the endpoint no longer exists.
    case gone
}

/// The delivery state machine: from what an attempt found, the next state, pure.
public enum DeliveryLifecycle {
    public enum Decision: Sendable, Hashable {
        case delivered
        case retry(at: Date)
        /// Dead-lettered; the endpoint is paused with `pauseReason`.
        case dead(pauseReason: String)
    }

    /// The state a delivery is enqueued in.
    public static let initial = WebhookDelivery.State.pending

    /// An operator replays a delivery: only a dead one goes back to `pending` (with a new job).
    public static func replayed(from state: WebhookDelivery.State) -> WebhookDelivery.State? {
        state == .dead ? .pending : nil
    }

    /// Why an endpoint was paused by the server.
    public static let failingReason = "deliveries_failing"
    public static let goneReason = "endpoint_gone"

    public static func next(
        after outcome: DeliveryOutcome, attempt: Int, firstAttemptAt: Date, now: Date, schedule: WebhookRetrySchedule,
        unitRandom: Double
    ) -> Decision {
        switch outcome {
        case .delivered: return .delivered
        case .gone: return .dead(pauseReason: goneReason)
        case .failed(_, let retryAfter):
            guard now.timeIntervalSince(firstAttemptAt) < schedule.maximumAge else { return .dead(pauseReason: failingReason) }
            var wait = schedule.delay(afterAttempt: attempt, unitRandom: unitRandom)
            if let retryAfter, retryAfter.isFinite, retryAfter > 0 { wait = max(wait, min(retryAfter, schedule.maximumRetryAfter)) }
            return .retry(at: now.addingTimeInterval(wait))
        }
    }
}
