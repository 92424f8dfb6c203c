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
}
