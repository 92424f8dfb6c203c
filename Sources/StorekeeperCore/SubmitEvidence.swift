public import Foundation
import JobQueue
public import Persistence
import StorekeeperDomain

/// Evidence accepted from anyone (an app, its backend, a notification, the CLI): written once.
/// `SubmissionRule` decides from the user's latest verification of the same evidence whether
/// the answer is that one or a new generation; a new one starts in the lifecycles' initial
/// states and records the user's claims, in the transaction that stores the evidence.
public struct SubmitEvidence: Sendable {
    let store: any SubmissionTransactions

    public init(store: any SubmissionTransactions) {
        self.store = store
    }

    public func callAsFunction(_ submission: EvidenceSubmission, now: Date) async throws -> SubmissionResult {
        try await store.accept(submission, now: now, decide: Self.decision(for: submission))
    }

    /// The pure decision the accepting transaction applies; also what a notification's
    /// transaction applies to the submission it causes.
    public static func decision(for submission: EvidenceSubmission) -> SubmissionDecision {
        let refresh = submission.refresh
        let claims = Array(Set(submission.claims)).sorted()
        return { latest in
            let stored = latest.map { (state: $0.verification.state, generation: $0.generation) }
            switch SubmissionRule.verdict(latest: stored, refresh: refresh) {
            case .existing:
                return .none
            case .create(let generation):
                return .create(
                    PendingVerification(
                        id: UUID().uuidString.lowercased(), jobId: UUID().uuidString.lowercased(), generation: generation,
                        state: VerificationLifecycle.initial, jobState: JobLifecycle.initial, claims: claims))
            }
        }
    }
}
