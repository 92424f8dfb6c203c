/// Runs one kind of job. Handlers must be idempotent: delivery is at least once, because a
/// runner can die after the work and before recording it.
public protocol JobHandler: Sendable {
    var kind: String { get }
    func run(_ lease: JobLease) async -> JobOutcome
}

/// A handler that runs the leases of its kind leased together as one batch: one read of what
/// they need instead of one each (the store's reads and the hops to reach it cost more than
/// short jobs do). Each lease still ends on its own, reported through `done` as soon as it ends,
/// so its slot frees without waiting for the batch's slowest job.
public protocol BatchJobHandler: JobHandler {
    func run(batch leases: [JobLease], done: @escaping @Sendable (JobLease, JobOutcome) async -> Void) async
}
