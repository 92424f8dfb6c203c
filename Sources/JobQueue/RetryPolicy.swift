public import Foundation

/// Exponential backoff with jitter and a cap: `base * 2^(attempt-1)`, capped, then spread by
/// ±`jitter` so that retries after an outage do not all hit Apple at the same instant.
public struct RetryPolicy: Sendable, Hashable, Codable {
    public var base: TimeInterval
    public var cap: TimeInterval
    /// Fraction of the delay used as jitter on each side, in 0...1.
    public var jitter: Double

    public init(base: TimeInterval = 2, cap: TimeInterval = 600, jitter: Double = 0.2) {
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// Delay before the attempt after `attempt` (1-based). `unitRandom` is in 0..<1 and is a
    /// parameter so the function is pure and testable.
    public func delay(afterAttempt attempt: Int, unitRandom: Double) -> TimeInterval {
        let exponent = Double(max(0, min(attempt - 1, 40)))
        let raw = min(cap, base * pow(2, exponent))
        let spread = raw * jitter * (unitRandom * 2 - 1)
        return max(0, min(cap, raw + spread))
    }
}
