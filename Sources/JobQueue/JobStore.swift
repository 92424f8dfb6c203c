public import Foundation
public import StorekeeperErrors

/// The database seam of the queue. Every adapter passes the same conformance suite.
public protocol JobStore: Sendable {
    /// Woken after every commit that queues a job or makes one due (never before the commit, so
    /// whoever is woken finds it), by the store itself: this process's runners wait on it, and no
    /// caller has to remember to wake them. Stores shared by processes also relay other processes'
    /// commits to it.
    var queued: WakeSignal { get }

    /// Leases up to `limit` jobs of the given kinds that are due at `now`, including running jobs
    /// whose lease has expired (their holder is presumed dead). One statement, one transaction.
    func leaseJobs(kinds: [String], limit: Int, owner: String, now: Date, leaseDuration: TimeInterval) async throws -> [JobLease]

    /// Writes `transition` (from `JobLifecycle`) for the job `lease` holds, guarded by its
    /// `from` state and the lease token; false when the lease is no longer held (nothing written).
    func endAttempt(_ lease: JobLease, _ transition: JobLifecycle.Transition, now: Date) async throws -> Bool

    /// Gives a leased job back as if this lease had not been taken: due now, its attempt not
    /// counted (the process is stopping, the job did not fail). What the job drives goes back to
    /// its waiting state in the same transaction. False when the lease is no longer held.
    func releaseJob(_ lease: JobLease, now: Date) async throws -> Bool

    /// Owners of the leases held now, to find those whose process is gone.
    func leaseOwners() async throws -> [String]

    /// Makes every lease of `owner` claimable at once (its process is known to be gone); the
    /// attempt it interrupted stays counted. Returns how many.
    func releaseLeases(owner: String, now: Date) async throws -> Int

    /// Makes every waiting job of `kinds` due, in arrival order: Apple answers again, and nothing
    /// should sleep out its own backoff. With `perSecond`, the n-th oldest becomes due n ÷
    /// `perSecond` seconds after `now`, so the released work reaches Apple at that rate (across
    /// every process that leases it); without, all are due at once (each job's run time becomes
    /// its creation time). Other worker processes are told. Returns how many.
    func releaseWaitingJobs(kinds: [String], now: Date, perSecond: Double?) async throws -> Int

    /// The earliest time a job becomes due (available run time or lease expiry), if any.
    func nextJobDue() async throws -> Date?

    /// Jobs per state, for metrics.
    func jobCounts() async throws -> [JobState: Int]
}

/// The job store's own errors (`CodedError` over `JobStoreErrorCode`).
public typealias JobStoreError = CodedError<JobStoreErrorCode>

public struct JobStoreErrorCode: Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }
    public static let leaseLost = JobStoreErrorCode("lease_lost")
    public static let notFound = JobStoreErrorCode("not_found")
    public var description: String { name }
}

extension JobStore {
    /// Every waiting job of `kinds` due at once, oldest first.
    public func releaseWaitingJobs(kinds: [String], now: Date) async throws -> Int {
        try await releaseWaitingJobs(kinds: kinds, now: now, perSecond: nil)
    }

    /// Finishes a leased job; false when the lease is no longer held (nothing written).
    public func completeJob(_ lease: JobLease, now: Date) async throws -> Bool {
        try await endAttempt(lease, JobLifecycle.ending(.completed(reason: nil)), now: now)
    }

    public func retryJob(_ lease: JobLease, at: Date, reason: String, now: Date) async throws -> Bool {
        try await endAttempt(lease, JobLifecycle.ending(.retry(at: at, reason: reason)), now: now)
    }

    public func discardJob(_ lease: JobLease, reason: String, now: Date) async throws -> Bool {
        try await endAttempt(lease, JobLifecycle.ending(.discarded(reason: reason)), now: now)
    }

    /// Releases the leases of every process this machine can prove is gone (see
    /// `ProcessIdentity`), so verifications a crash interrupted resume at start, not after
    /// `leaseDuration`. Leases of live or unprovable holders are left to expire.
    public func releaseLeasesOfGoneProcesses(now: Date, observer: ProcessIdentity = .current) async throws -> Int {
        var released = 0
        for owner in try await leaseOwners() {
            guard let holder = ProcessIdentity(owner: owner), holder.isCertainlyGone(seenFrom: observer) else { continue }
            released += try await releaseLeases(owner: owner, now: now)
        }
        return released
    }
}
