public import Foundation
public import JobQueue
public import StorekeeperDomain

/// A user's latest verification of some evidence, as a submission's accepting transaction read
/// it: what `SubmitEvidence` decides from.
public struct LatestSubmission: Sendable {
    public var verification: VerificationRecord
    public var generation: Int

    public init(verification: VerificationRecord, generation: Int) {
        self.verification = verification
        self.generation = generation
    }
}

/// A verification a submission starts, as decided: its ids, generation, the states it and its
/// job start in, and the original transaction ids it claims for its user (unique, sorted).
public struct PendingVerification: Sendable, Hashable {
    public var id: String
    public var jobId: String
    public var generation: Int
    public var state: VerificationState
    public var jobState: JobState
    public var claims: [String]

    public init(id: String, jobId: String, generation: Int, state: VerificationState, jobState: JobState, claims: [String]) {
        self.id = id
        self.jobId = jobId
        self.generation = generation
        self.state = state
        self.jobState = jobState
        self.claims = claims
    }
}

/// What a submission's accepting transaction writes, beyond storing the evidence.
public enum SubmissionWrite: Sendable, Hashable {
    /// Nothing: the answer is the latest verification as it stands.
    case none
    /// A new verification, its job and its claims.
    case create(PendingVerification)
}

/// The decision a submission's accepting transaction applies: pure, and maybe run more than once
/// (PostgreSQL runs a transaction again after a unique violation).
public typealias SubmissionDecision = @Sendable (LatestSubmission?) -> SubmissionWrite

/// A submission with the decision its accepting transaction applies: how a notification's
/// transaction carries the submission it causes.
public struct DecidedSubmission: Sendable {
    public var submission: EvidenceSubmission
    public var decide: SubmissionDecision

    public init(_ submission: EvidenceSubmission, decide: @escaping SubmissionDecision) {
        self.submission = submission
        self.decide = decide
    }
}

/// The accepting transaction of a submission, the one way evidence enters the store: it stores
/// the evidence (deduplicated by hash), reads the user's latest verification of it, and writes
/// what `decide` returns, in one transaction. Adapters hold no rule of their own here.
public protocol SubmissionTransactions: Sendable {
    func accept(_ submission: EvidenceSubmission, now: Date, decide: @escaping SubmissionDecision) async throws -> SubmissionResult
}

extension SubmissionResult {
    /// What the accepting transaction answers once it applied `write`: the latest verification
    /// for `.none` (the decider only returns it when there is one), the new one otherwise.
    public static func applied(
        _ write: SubmissionWrite, latest: LatestSubmission?, submission: EvidenceSubmission, at now: Date
    )
        -> SubmissionResult?
    {
        switch write {
        case .none:
            return latest.map { SubmissionResult(verification: $0.verification, created: false) }
        case .create(let pending):
            return SubmissionResult(verification: .pending(pending, submission: submission, at: now), created: true)
        }
    }
}
