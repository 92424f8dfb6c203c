public import Foundation

/// The state of a background loop against a dependency that may fail for a while (a full disk,
/// a database that went away): how long to wait before the next try, and whether this failure or
/// success changes the state, so the loop logs one line per change instead of one per attempt.
public struct FailureBackoff: Sendable, Hashable {
    public var base: TimeInterval
    public var cap: TimeInterval
    public private(set) var consecutiveFailures = 0

    public init(base: TimeInterval = 0.1, cap: TimeInterval = 10) {
        self.base = base
        self.cap = cap
    }

    public var isFailing: Bool { consecutiveFailures > 0 }

    /// Records a failure; `startsOutage` is true for the first of a run.
    public mutating func failed() -> (delay: TimeInterval, startsOutage: Bool) {
        consecutiveFailures += 1
        let delay = min(cap, base * pow(2, Double(min(consecutiveFailures - 1, 30))))
        return (delay, consecutiveFailures == 1)
    }

    /// Records a success; returns the number of failures it ends (0 when none).
    public mutating func succeeded() -> Int {
        defer { consecutiveFailures = 0 }
        return consecutiveFailures
    }
}
