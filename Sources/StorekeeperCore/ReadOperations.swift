public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// What the operator's gauges and the health check read: counts by state, never user data.
public struct ReadOperations: Sendable {
    public typealias Store = OperationsStore & JobStore & WebhookStore & VerificationStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// A cheap read that fails when the database cannot be read.
    public func probe() async throws {
        _ = try await store.jobCounts()
    }

    public struct Counts: Sendable {
        public var jobs: [JobState: Int]
        public var verifications: [VerificationState: Int]
        /// Not final and older than the flagging age.
        public var flagged: Int
        public var deliveries: [WebhookDelivery.State: Int]
        public var pausedEndpoints: Int
        /// Verifications scheduled for another try (Apple failed or is down).
        public var waiting: Int
        /// Seconds since the oldest of those was submitted (0 when none).
        public var oldestWaitingSeconds: Double

        public init(
            jobs: [JobState: Int], verifications: [VerificationState: Int], flagged: Int, deliveries: [WebhookDelivery.State: Int],
            pausedEndpoints: Int, waiting: Int, oldestWaitingSeconds: Double
        ) {
            self.jobs = jobs
            self.verifications = verifications
            self.flagged = flagged
            self.deliveries = deliveries
            self.pausedEndpoints = pausedEndpoints
            self.waiting = waiting
            self.oldestWaitingSeconds = oldestWaitingSeconds
        }
    }

    public func counts(appIds: [String], flagBefore: Date, now: Date) async throws -> Counts {
        let verifications = try await store.verificationCounts()
        var paused = 0
        for appId in appIds { paused += try await store.endpoints(appId: appId).filter { $0.state == .paused }.count }
        let waiting = verifications[.retryScheduled] ?? 0
        var oldest = 0.0
        if waiting > 0, let first = try await store.verifications(appId: nil, states: [.retryScheduled], createdBefore: nil, limit: 1).first {
            oldest = max(0, now.timeIntervalSince(first.createdAt))
        }
        return Counts(
            jobs: try await store.jobCounts(), verifications: verifications,
            flagged: try await store.countVerifications(states: VerificationState.allCases.filter { !$0.isFinal }, createdBefore: flagBefore),
            deliveries: try await store.deliveryCounts(), pausedEndpoints: paused, waiting: waiting, oldestWaitingSeconds: oldest)
    }

    /// One outage of an Apple endpoint as the processes shared it: from the move down to the move
    /// back to healthy (nil while under way).
    public struct Outage: Sendable, Hashable {
        public var endpoint: String
        public var began: Date
        public var ended: Date?

        public init(endpoint: String, began: Date, ended: Date?) {
            self.endpoint = endpoint
            self.began = began
            self.ended = ended
        }
    }

    /// The outages that began or ended at or after `since`, newest first, from the kept moves of
    /// the shared health (the newest `limit` moves; one that ended without its beginning among
    /// them is left out).
    public func outages(since: Date, limit: Int = 1_000) async throws -> [Outage] {
        Self.outages(from: try await store.appleHealthHistory(since: since, limit: limit))
    }

    /// Notifications received since `since`, by app, type and outcome.
    public func notificationCounts(since: Date) async throws -> [NotificationCount] {
        try await store.notificationCounts(since: since)
    }

    /// Pairs moves (newest first) into outages per endpoint.
    static func outages(from moves: [AppleHealthMove]) -> [Outage] {
        var open: [String: Outage] = [:]
        var outages: [Outage] = []
        for move in moves.reversed() {
            if move.state == .healthy {
                if var outage = open.removeValue(forKey: move.endpoint) {
                    outage.ended = move.at
                    outages.append(outage)
                }
            } else if open[move.endpoint] == nil {
                open[move.endpoint] = Outage(endpoint: move.endpoint, began: move.at, ended: nil)
            }
        }
        outages.append(contentsOf: open.values)
        return outages.sorted { ($0.began, $0.endpoint) > ($1.began, $1.endpoint) }
    }
}
