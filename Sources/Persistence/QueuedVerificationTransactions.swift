public import Foundation
public import JobQueue
public import StorekeeperDomain

/// Which verifications an operator's transaction reads, with their jobs.
public enum QueuedSelection: Sendable, Hashable {
    /// One verification by id.
    case verification(id: String)
    /// An app's verifications in `state` taken under another configuration than `fingerprint`
    /// (or none recorded): the holds a changed configuration releases.
    case heldUnder(appId: String, state: VerificationState, otherThan: String)
}

/// A verification and its job as an operator's transaction read them.
public struct QueuedVerification: Sendable {
    public var verification: VerificationRecord
    public var jobState: JobState
    /// When the job is running: until when its lease holds.
    public var leaseExpiresAt: Date?

    public init(verification: VerificationRecord, jobState: JobState, leaseExpiresAt: Date?) {
        self.verification = verification
        self.jobState = jobState
        self.leaseExpiresAt = leaseExpiresAt
    }
}

/// One guarded write of an operator's transaction.
public enum QueuedWrite: Sendable {
    /// The verification moves on (guarded by `from`); with `restarts` its schedule and
    /// finalization are cleared.
    case verification(VerificationChange)
    /// The job moves outside any lease (guarded by `from`; from `running` only once the lease
    /// has expired): due at `runAt`, its lease and finalization cleared.
    case job(id: String, JobLifecycle.Transition)
    /// The operator's action, recorded in the audit log with the change it made.
    case audit(AuditEntry)
}

public struct QueuedDecision<Result: Sendable>: Sendable {
    public var writes: [QueuedWrite]
    public var result: Result

    public init(writes: [QueuedWrite], result: Result) {
        self.writes = writes
        self.result = result
    }

    /// Verifications these writes change: their waiters are told once the transaction commits.
    public var changedVerifications: [String] {
        writes.compactMap { write in
            if case .verification(let change) = write { change.id } else { nil }
        }
    }
}

/// The transaction port of the use cases that move verifications without a lease (an
/// operator's requeue, the release of configuration holds): read the selection and its jobs,
/// `decide`, apply the guarded writes in order. A guarded write that finds its row moved on
/// throws `StorageConflict` and the whole transaction rolls back. `decide` must be pure.
public protocol QueuedVerificationTransactions: Sendable {
    func withQueued<T: Sendable>(
        _ selection: QueuedSelection, now: Date, _ decide: @escaping @Sendable ([QueuedVerification]) throws -> QueuedDecision<T>
    ) async throws -> T
}
