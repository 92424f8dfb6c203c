public import Foundation

/// Runs one kind of job. Handlers must be idempotent: delivery is at least once, because a
/// runner can die after the work and before recording it.
public protocol JobHandler: Sendable {
    var kind: String { get }
    func run(_ lease: JobLease) async -> JobOutcome
}

/// A handler whose jobs stand for state of their own (a verification): at shutdown the runner
/// gives their unfinished leases back through it, so that state moves in the same transaction
/// as the job. Other kinds are released by the store alone (`JobStore.releaseJob`).
public protocol ReleasingJobHandler: JobHandler {
    /// Returns the job to the queue (its attempt not counted) with what it stands for; false
    /// when the lease was lost meanwhile.
    func release(_ lease: JobLease, now: Date) async throws -> Bool
}

/// A handler that runs the leases of its kind leased together as one batch: one read of what
/// they need instead of one each (the store's reads and the hops to reach it cost more than
/// short jobs do). Each lease still ends on its own, reported through `done` as soon as it ends,
/// so its slot frees without waiting for the batch's slowest job.
public protocol BatchJobHandler: JobHandler {
    func run(batch leases: [JobLease], done: @escaping @Sendable (JobLease, JobOutcome) async -> Void) async
}
