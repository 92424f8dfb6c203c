import StorekeeperDomain

/// When an Apple endpoint counts as down and how it is probed (`AppleHealth`). Off: every job
/// calls Apple on its own backoff, as before.
public struct AppleHealthSettings: Codable, Sendable, Hashable {
    public var enabled: Bool = true
    /// Consecutive failed calls that make an endpoint degraded (logged), then down (calls stop).
    public var degradedAfterFailures: Int = 3
    public var downAfterFailures: Int = 6
    /// Probes while down: after 1, 2, 4 … seconds, at most `probeCapSeconds` apart.
    public var probeBaseSeconds: Double = 1
    public var probeCapSeconds: Double = 30

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case enabled, degradedAfterFailures, downAfterFailures, probeBaseSeconds, probeCapSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = AppleHealthSettings()
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
        degradedAfterFailures = try c.decodeIfPresent(Int.self, forKey: .degradedAfterFailures) ?? d.degradedAfterFailures
        downAfterFailures = try c.decodeIfPresent(Int.self, forKey: .downAfterFailures) ?? d.downAfterFailures
        probeBaseSeconds = try c.decodeIfPresent(Double.self, forKey: .probeBaseSeconds) ?? d.probeBaseSeconds
        probeCapSeconds = try c.decodeIfPresent(Double.self, forKey: .probeCapSeconds) ?? d.probeCapSeconds
    }

    var problems: [String] {
        var problems: [String] = []
        if degradedAfterFailures < 1 || downAfterFailures < degradedAfterFailures {
            problems.append("appleHealth: need 1 ≤ degradedAfterFailures ≤ downAfterFailures")
        }
        if !(probeBaseSeconds > 0) || !(probeCapSeconds >= probeBaseSeconds) {
            problems.append("appleHealth: need 0 < probeBaseSeconds ≤ probeCapSeconds")
        }
        return problems
    }

    /// A probe lost with its process is replaced after the longest a verifyReceipt attempt can take.
    func policy(attemptTimeoutSeconds: Double) -> AppleHealth.Policy {
        AppleHealth.Policy(
            degradedAfterFailures: degradedAfterFailures, downAfterFailures: downAfterFailures, probeBaseSeconds: probeBaseSeconds,
            probeCapSeconds: probeCapSeconds, probeTimeoutSeconds: attemptTimeoutSeconds * 3 + 5)
    }
}
