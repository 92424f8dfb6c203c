public import Foundation
import JobQueue
public import Persistence
import StorekeeperDomain

/// At start, an app whose configuration changed (a new shared secret, a key) releases the
/// verifications held for its old configuration: each goes back to the queue through the
/// verification and job lifecycles, due now.
public struct ReleaseConfigurationHolds: Sendable {
    let store: any QueuedVerificationTransactions

    public init(store: any QueuedVerificationTransactions) {
        self.store = store
    }

    /// How many verifications were released.
    public func callAsFunction(appId: String, currentFingerprint: String, now: Date) async throws -> Int {
        try await store.withQueued(.heldUnder(appId: appId, state: .configurationError, otherThan: currentFingerprint), now: now) {
            rows in
            var writes: [QueuedWrite] = []
            for row in rows {
                let verification = row.verification
                guard let next = VerificationLifecycle.next(from: verification.state, on: .requeued) else { continue }
                // Only a job still parked is released; one already queued again stays as it is.
                if row.jobState == .held { writes.append(.job(id: verification.jobId, JobLifecycle.releaseHold(at: now))) }
                writes.append(.verification(VerificationChange(id: verification.id, from: verification.state, to: next, restarts: true)))
            }
            return QueuedDecision(writes: writes, result: writes.filter { if case .verification = $0 { true } else { false } }.count)
        }
    }
}
