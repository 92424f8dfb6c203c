import Foundation

/// An app user's claim on an original transaction, recorded when their evidence was accepted
/// (the locally parsed receipt or verified signed transaction named it). Claims order who
/// submitted a purchase first, independently of which verification finishes first.
public struct OwnershipClaim: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public var appUserId: String
    /// Order of acceptance: one value per submission, so all claims of one submission come
    /// before or after all claims of another (two users waiting on each other is impossible).
    public var acceptedSequence: Int64
    /// The state of the verification the claim came with: a claim whose evidence proved invalid
    /// is void.
    public var verificationState: VerificationState

    public init(originalTransactionId: String, appUserId: String, acceptedSequence: Int64, verificationState: VerificationState) {
        self.originalTransactionId = originalTransactionId
        self.appUserId = appUserId
        self.acceptedSequence = acceptedSequence
        self.verificationState = verificationState
    }
}

/// The binding rule for an original transaction nobody is bound to yet: it goes to the app user
/// who submitted it first. Without the claims, it went to whoever's verification finished
/// first, and a crash (a dead lease waited out) let a later submitter win.
public enum OwnershipClaimRule {
    public enum Verdict: Sendable, Hashable {
        /// No earlier live claim by another user: this user may be bound.
        case proceed
        /// Another user submitted it earlier and their verification has not ended: wait for it,
        /// so the earlier submitter is bound whichever verification finishes first.
        case wait(claimant: String)
    }

    /// `claims` of one original transaction, any order. Claims of `appUserId` itself, claims
    /// whose verification ended (invalid: void; verified without binding it: Apple did not show
    /// it to them) and claims accepted after this user's own claim do not hold it back.
    /// Evidence without claims (a legacy receipt, a notification) keeps the first-finished rule.
    public static func verdict(for appUserId: String, claims: [OwnershipClaim]) -> Verdict {
        let ordered = claims.sorted { ($0.acceptedSequence, $0.appUserId) < ($1.acceptedSequence, $1.appUserId) }
        for claim in ordered {
            if claim.appUserId.isSameIdentifier(as: appUserId) { return .proceed }
            if claim.verificationState.isFinal { continue }
            return .wait(claimant: claim.appUserId)
        }
        return .proceed
    }
}
