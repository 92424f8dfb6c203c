public import Foundation

/// States of a durable job. Each names who moves a job out of it.
public enum JobState: String, Codable, Sendable, CaseIterable {
    /// Waiting for `runAt`; a runner leases it.
    case available
    /// Leased by a runner until `leaseExpiresAt`; its holder finishes it, or the lease runs
    /// out and any runner may lease it again.
    case running
    /// Done; never leased again.
    case completed
    /// Given up on by its handler; kept for inspection.
    case discarded
    /// Parked until something outside the queue releases it (e.g. a configuration change).
    case held
}

/// A job held by one runner for a bounded time. Every write that finishes the job names
/// the lease token, so a runner whose lease expired cannot overwrite its successor's work.
public struct JobLease: Sendable, Hashable {
    public var jobId: String
    public var kind: String
    public var payload: String
    /// 1 for the first lease of this job, then one more for each later lease.
    public var attempt: Int
    public var token: String
    public var expiresAt: Date
    public var createdAt: Date

    public init(jobId: String, kind: String, payload: String, attempt: Int, token: String, expiresAt: Date, createdAt: Date) {
        self.jobId = jobId
        self.kind = kind
        self.payload = payload
        self.attempt = attempt
        self.token = token
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

/// What a handler decided about the job it ran.
public enum JobOutcome: Sendable, Hashable {
    case completed
    case retry(at: Date, reason: String)
    case discard(reason: String)
    /// The handler already finished the job inside its own database transaction, together with
    /// its effects (the exactly-once path); the runner writes nothing more.
    case finishedByHandler
}
