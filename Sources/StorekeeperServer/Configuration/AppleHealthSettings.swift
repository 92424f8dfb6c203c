import StorekeeperDomain

/// When an Apple endpoint counts as down and how it is probed (`AppleHealth`). Off: every job
/// calls Apple on its own backoff, as before.
public struct AppleHealthSettings: Encodable, Sendable, Hashable {
    public var enabled: Bool = true
    /// Consecutive failed calls that make an endpoint degraded (logged), then down (calls stop).
    public var degradedAfterFailures: Int = 3
    public var downAfterFailures: Int = 6
    /// Probes while down: after 1, 2, 4 … seconds, at most `probeCapSeconds` apart. The cap
    /// bounds how long a receipt waits once Apple is back (the next probe finds out), so it is
    /// short; a probe costs Apple one call.
    public var probeBaseSeconds: Double = 1
    public var probeCapSeconds: Double = 5
    /// When Apple answers again, the waiting verifications become due this many a second, oldest
    /// first, across every worker process. 50 is Apple's published production limit for the
    /// App Store Server API's transaction endpoints (the stand-in when verifyReceipt fails);
    /// verifyReceipt publishes none. 0 releases them all at once.
    public var releasePerSecond: Double = 50

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled, degradedAfterFailures, downAfterFailures, probeBaseSeconds, probeCapSeconds, releasePerSecond
    }

    var problems: [String] {
        var problems: [String] = []
        if degradedAfterFailures < 1 || downAfterFailures < degradedAfterFailures {
            problems.append("appleHealth: need 1 ≤ degradedAfterFailures ≤ downAfterFailures")
        }
        if !(probeBaseSeconds > 0) || !(probeCapSeconds >= probeBaseSeconds) {
            problems.append("appleHealth: need 0 < probeBaseSeconds ≤ probeCapSeconds")
        }
        if !(releasePerSecond >= 0) || !releasePerSecond.isFinite {
            problems.append("appleHealth: releasePerSecond must be 0 (all at once) or more")
        }
        return problems
    }

    /// A probe still out after the cap (Apple hangs, or its process died) no longer holds the
    /// next one back: Apple's return is noticed within a cap, whatever the hung call does.
    func policy() -> AppleHealth.Policy {
        AppleHealth.Policy(
            degradedAfterFailures: degradedAfterFailures, downAfterFailures: downAfterFailures, probeBaseSeconds: probeBaseSeconds,
            probeCapSeconds: probeCapSeconds, probeTimeoutSeconds: probeCapSeconds)
    }
}
