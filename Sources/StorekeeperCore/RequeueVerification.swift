public import Foundation
import JobQueue
public import Persistence
public import StorekeeperDomain

/// An operator asks for a verification to be verified again now (manual retry): the
/// verification and its job go back to the queue through their lifecycles, unless a worker is
/// verifying it right now. A verification whose worker died (lease run out) is taken over.
public struct RequeueVerification: Sendable {
    let store: any QueuedVerificationTransactions

    public init(store: any QueuedVerificationTransactions) {
        self.store = store
    }

    public enum Result: Sendable, Hashable {
        case requeued
        /// A worker holds its job's lease: it is being verified right now.
        case busy
        case notFound
        /// Its state cannot be requeued (never, with today's lifecycle; an unknown state fails
        /// the read first).
        case refused(VerificationState)
    }

    /// With `actor`, a requeue is recorded in the audit log in its transaction
    /// (`verification_requeued`, the verification as subject, its app user).
    public func callAsFunction(verificationId: String, actor: AuditActor? = nil, now: Date) async throws -> Result {
        let auditId = AuditEntry.freshId()
        return try await store.withQueued(.verification(id: verificationId), now: now) { rows in
            guard let row = rows.first else { return QueuedDecision(writes: [], result: .notFound) }
            guard let job = JobLifecycle.requeue(from: row.jobState, leaseExpiresAt: row.leaseExpiresAt, at: now) else {
                return QueuedDecision(writes: [], result: .busy)
            }
            let verification = row.verification
            // A verification left `verifying` by a dead worker first ends that attempt.
            let start =
                verification.state == .verifying
                ? VerificationLifecycle.next(from: .verifying, on: .leaseExpired) ?? verification.state : verification.state
            guard let next = VerificationLifecycle.next(from: start, on: .requeued) else {
                return QueuedDecision(writes: [], result: .refused(verification.state))
            }
            let change = VerificationChange(id: verification.id, from: verification.state, to: next, restarts: true)
            var writes: [QueuedWrite] = [.job(id: verification.jobId, job), .verification(change)]
            if let actor {
                writes.append(
                    .audit(
                        AuditEntry(
                            id: auditId, appId: verification.appId, at: now, actor: actor.name, action: "verification_requeued",
                            appUserId: verification.appUserId, reason: actor.reason, subject: verification.id
                        ).attributed(to: actor)))
            }
            return QueuedDecision(writes: writes, result: .requeued)
        }
    }
}
