/// What a submission of evidence does when the same user already submitted the same evidence:
/// the same post returns the same verification (no second job, no second Apple call), and a
/// refresh starts a new generation only once the previous one has ended. Written once; each
/// storage adapter reads the latest generation and applies the verdict in its accepting
/// transaction.
public enum SubmissionRule {
    public enum Verdict: Sendable, Hashable {
        /// Answer with the latest verification as it stands.
        case existing
        /// Create a verification of this generation (1 for the first).
        case create(generation: Int)
    }

    /// `latest`: the state and generation of this user's latest verification of this evidence.
    public static func verdict(latest: (state: VerificationState, generation: Int)?, refresh: Bool) -> Verdict {
        guard let latest else { return .create(generation: 1) }
        guard refresh, latest.state.isFinal else { return .existing }
        return .create(generation: latest.generation + 1)
    }
}
