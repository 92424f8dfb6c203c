public import Foundation

/// The job lifecycle as a pure state machine. Every way an attempt ends is an event; the
/// machine says which state the job moves to, or refuses. Adapters write exactly the
/// transition it returns, guarded by `WHERE state = from AND lease_token = …`, so a write
/// for a job that moved on meanwhile (lease expired, requeued) changes nothing.
public enum JobLifecycle {
    public enum Event: Sendable, Hashable {
        /// The handler finished its work; `reason` notes an ending that was not a success (the
        /// verification was refused), for the operator.
        case completed(reason: String?)
        /// The handler gave up; the job is kept for inspection.
        case discarded(reason: String)
        /// Try again at `at`; the attempt counts.
        case retry(at: Date, reason: String)
        /// Park until something outside the queue releases it.
        case held(reason: String)
        /// The process is stopping: due again at `at`, as if this attempt had not been taken.
        case released(at: Date, reason: String)
    }

    /// The state a job is enqueued in: due at its run time.
    public static let initial = JobState.available

    /// An operator puts a job back in the queue, due at `at`: from any state but a running one
    /// whose lease still holds (nil then: it is being worked on). A job whose lease ran out is
    /// taken from its dead holder.
    public static func requeue(from state: JobState, leaseExpiresAt: Date?, at: Date) -> Transition? {
        if state == .running, let expires = leaseExpiresAt, expires > at { return nil }
        return Transition(from: state, to: .available, runAt: at, lastError: nil, finalizes: false, uncountsAttempt: false)
    }

    /// Something outside the queue releases a held job (a configuration fixed): due at `at`.
    public static func releaseHold(at: Date) -> Transition {
        Transition(from: .held, to: .available, runAt: at, lastError: nil, finalizes: false, uncountsAttempt: false)
    }

    /// A job that is no longer wanted (its webhook endpoint was deleted) ends now, unless a
    /// runner holds it: that one finds its work gone and completes by itself.
    public static func cancel(reason: String) -> Transition {
        Transition(from: .available, to: .completed, runAt: nil, lastError: reason, finalizes: true, uncountsAttempt: false)
    }

    /// One guarded write of the jobs table.
    public struct Transition: Sendable, Hashable {
        public var from: JobState
        public var to: JobState
        /// The new run time; nil keeps the stored one.
        public var runAt: Date?
        public var lastError: String?
        /// The job reached an end state: `finalized_at` is set.
        public var finalizes: Bool
        /// The attempt this lease counted is given back (a release, not a failure).
        public var uncountsAttempt: Bool
    }

    /// The next state of a job in `state` on `event`. Only a running job (one a lease holds)
    /// ends an attempt; anything else is refused.
    public static func next(from state: JobState, on event: Event) -> Transition? {
        state == .running ? ending(event) : nil
    }

    /// The transition of a job its lease holds: `running` by definition.
    public static func ending(_ event: Event) -> Transition {
        let state = JobState.running
        switch event {
        case .completed(let reason):
            return Transition(from: state, to: .completed, runAt: nil, lastError: reason, finalizes: true, uncountsAttempt: false)
        case .discarded(let reason):
            return Transition(from: state, to: .discarded, runAt: nil, lastError: reason, finalizes: true, uncountsAttempt: false)
        case .retry(let at, let reason):
            return Transition(from: state, to: .available, runAt: at, lastError: reason, finalizes: false, uncountsAttempt: false)
        case .held(let reason):
            return Transition(from: state, to: .held, runAt: nil, lastError: reason, finalizes: false, uncountsAttempt: false)
        case .released(let at, let reason):
            return Transition(from: state, to: .available, runAt: at, lastError: reason, finalizes: false, uncountsAttempt: true)
        }
    }
}
