public import Foundation

/// Whether one of Apple's endpoints (verifyReceipt or the Server API, per environment) is
/// answering, decided from recent call outcomes. A pure state machine: callers ask before
/// calling (`admit`) and report what happened (`record`); time is an input.
///
/// While Apple is down, ordinary work does not call at all: one call at a time is let through
/// as a probe, on its own backoff, and everything else waits without spending attempts. The
/// first answer (probe or not) makes the endpoint healthy again, and the caller is told, so
/// waiting work can be released at once instead of sleeping out its own backoff.
public struct AppleHealth: Sendable, Hashable {
    public enum State: String, Sendable, Hashable, Codable, CaseIterable {
        /// Apple answers.
        case healthy
        /// Recent calls failed, but not enough to stop calling.
        case degraded
        /// Calls stopped; only probes go out.
        case down
    }

    public struct Policy: Sendable, Hashable {
        /// Consecutive failures that make a healthy endpoint degraded, and down.
        public var degradedAfterFailures: Int
        public var downAfterFailures: Int
        /// Probe backoff: `probeBaseSeconds × 2^(n-1)` after the n-th failed probe, at most `probeCapSeconds`.
        public var probeBaseSeconds: Double
        public var probeCapSeconds: Double
        /// A probe not reported within this time is taken as lost (its process died), and
        /// another may go.
        public var probeTimeoutSeconds: Double

        public init(
            degradedAfterFailures: Int = 3, downAfterFailures: Int = 6, probeBaseSeconds: Double = 1, probeCapSeconds: Double = 30,
            probeTimeoutSeconds: Double = 60
        ) {
            self.degradedAfterFailures = max(1, degradedAfterFailures)
            self.downAfterFailures = max(self.degradedAfterFailures, downAfterFailures)
            self.probeBaseSeconds = max(0.01, probeBaseSeconds)
            self.probeCapSeconds = max(self.probeBaseSeconds, probeCapSeconds)
            self.probeTimeoutSeconds = max(0.01, probeTimeoutSeconds)
        }

        func probeDelay(afterFailedProbes count: Int) -> Double {
            guard count > 0 else { return probeBaseSeconds }
            return min(probeCapSeconds, probeBaseSeconds * pow(2, Double(min(count - 1, 30))))
        }
    }

    public enum Admission: Sendable, Hashable {
        /// Call Apple.
        case call
        /// Call Apple as the one probe; report the outcome with `probe: true`.
        case probe
        /// Do not call; try again at this instant (the next probe's time at the latest).
        case wait(until: Date)
    }

    /// A change of state, for the one log line, the metrics and the release of waiting work.
    public struct Transition: Sendable, Hashable {
        public var from: State
        public var to: State
        public var at: Date

        public init(from: State, to: State, at: Date) {
            self.from = from
            self.to = to
            self.at = at
        }

        /// Down (or degraded) to healthy: waiting work may go now.
        public var recovered: Bool { to == .healthy }
    }

    public let policy: Policy
    public private(set) var state: State = .healthy
    /// When the current state began.
    public private(set) var since: Date
    public private(set) var consecutiveFailures = 0
    /// Probes that failed since the endpoint went down.
    public private(set) var failedProbes = 0
    public private(set) var nextProbeAt: Date?
    /// When the probe now out was let through; nil when none is out.
    public private(set) var probeOutSince: Date?
    /// When the latest probe was let through (out or not).
    public private(set) var lastProbeAt: Date?
    /// When the endpoint last came back from down.
    public private(set) var recoveredAt: Date?

    public init(policy: Policy = Policy(), now: Date) {
        self.policy = policy
        since = now
    }

    /// Whether a call may go to Apple now.
    public mutating func admit(at now: Date) -> Admission {
        guard state == .down else { return .call }
        if let out = probeOutSince, now < out.addingTimeInterval(policy.probeTimeoutSeconds) {
            return .wait(until: max(nextProbeAt ?? now, out.addingTimeInterval(policy.probeTimeoutSeconds)))
        }
        let due = nextProbeAt ?? now
        guard now >= due else { return .wait(until: due) }
        probeOutSince = now
        lastProbeAt = now
        nextProbeAt = now.addingTimeInterval(policy.probeDelay(afterFailedProbes: failedProbes + 1))
        return .probe
    }

    /// What a call found: `answered` when Apple gave an answer of its own (valid or not: a
    /// status, a refusal, a redirect), false for connection failures, timeouts, 5xx and
    /// answers that are not Apple's. Returns the change of state, if any.
    ///
    /// `sentAt`: when the probe was let through. A probe that hung past the probe timeout and
    /// was replaced by a later one is stale when it finally fails: the failure counts, but it
    /// neither ends the later probe nor pushes the next one back (Apple may be back already, and
    /// every hung call failing late would otherwise delay noticing it).
    ///
    /// A failure of a call sent before the endpoint's last return from down is not counted at
    /// all: it says nothing of Apple now, and counting the late failures of calls that hung
    /// through the outage could put the endpoint down again with nothing left waiting to probe
    /// it, so that their own retries would sleep out their backoff.
    @discardableResult
    public mutating func record(answered: Bool, probe: Bool = false, sentAt: Date? = nil, at now: Date) -> Transition? {
        if !answered, let sentAt, let recoveredAt, sentAt < recoveredAt, state != .down { return nil }
        let stale = probe && sentAt.map { sent in lastProbeAt.map { sent < $0 } ?? false } ?? false
        let probe = probe && !stale
        if probe || (state == .down && answered) { probeOutSince = nil }
        if answered {
            consecutiveFailures = 0
            failedProbes = 0
            nextProbeAt = nil
            return move(to: .healthy, at: now)
        }
        consecutiveFailures += 1
        if probe { failedProbes += 1 }
        switch state {
        case .down:
            if probe { nextProbeAt = now.addingTimeInterval(policy.probeDelay(afterFailedProbes: failedProbes)) }
            return nil
        case .healthy, .degraded:
            if consecutiveFailures >= policy.downAfterFailures {
                nextProbeAt = now.addingTimeInterval(policy.probeDelay(afterFailedProbes: 0))
                return move(to: .down, at: now)
            }
            if consecutiveFailures >= policy.degradedAfterFailures { return move(to: .degraded, at: now) }
            return nil
        }
    }

    private mutating func move(to next: State, at now: Date) -> Transition? {
        guard next != state else { return nil }
        let transition = Transition(from: state, to: next, at: now)
        if state == .down, next == .healthy { recoveredAt = now }
        state = next
        since = now
        return transition
    }
}
