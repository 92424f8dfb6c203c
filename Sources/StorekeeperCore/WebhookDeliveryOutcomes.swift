public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// How one attempt of a webhook delivery ends, written once for every adapter: the delivery
/// state machine decides from what the attempt found, and the adapter applies the attempt, the
/// delivery's next state, the job's end and a pause in one transaction.
public struct WebhookDeliveryOutcomes: Sendable {
    let store: any WebhookStore
    let schedule: WebhookRetrySchedule

    public init(store: any WebhookStore, schedule: WebhookRetrySchedule) {
        self.store = store
        self.schedule = schedule
    }

    /// What each of these leased delivery jobs has to send, read together (one read per batch);
    /// a job whose delivery, event or notification is gone is absent.
    public func work(for jobIds: [String]) async throws -> [String: DeliveryWork] {
        try await store.deliveriesForJobs(jobIds: jobIds)
    }

    /// Records `attempt`'s `outcome`. Returns the decision taken, or nil when the lease was lost
    /// (nothing written; another runner owns the delivery now).
    public func finish(
        _ lease: JobLease, work: DeliveryWork, outcome: DeliveryOutcome, attempt: DeliveryAttempt, now: Date, unitRandom: Double
    ) async throws -> DeliveryLifecycle.Decision? {
        let change = Self.change(work: work, outcome: outcome, attempt: attempt, schedule: schedule, now: now, unitRandom: unitRandom)
        guard try await store.finishDeliveryAttempt(lease, change.change, now: now) else { return nil }
        return change.decision
    }

    /// The writes an attempt's outcome causes. Pure.
    static func change(
        work: DeliveryWork, outcome: DeliveryOutcome, attempt: DeliveryAttempt, schedule: WebhookRetrySchedule, now: Date,
        unitRandom: Double
    ) -> (decision: DeliveryLifecycle.Decision, change: DeliveryChange) {
        let first = work.delivery.firstAttemptAt ?? attempt.at
        let decision = DeliveryLifecycle.next(
            after: outcome, attempt: attempt.attempt, firstAttemptAt: first, now: now, schedule: schedule, unitRandom: unitRandom)
        let id = work.delivery.id
        switch decision {
        case .delivered:
            return (
                decision,
                DeliveryChange(
                    deliveryId: id, attempt: attempt, to: .delivered, nextAttemptAt: nil, firstAttemptAt: first,
                    job: JobLifecycle.ending(.completed(reason: nil)))
            )
        case .retry(let at):
            let reason = attempt.status.map(JobReason.webhookHTTP) ?? JobReason.webhookFailed(attempt.error)
            return (
                decision,
                DeliveryChange(
                    deliveryId: id, attempt: attempt, to: .pending, nextAttemptAt: at, firstAttemptAt: first,
                    job: JobLifecycle.ending(.retry(at: at, reason: reason)))
            )
        case .dead(let pauseReason):
            // The endpoint pauses from the state this batch read it in; the guarded write keeps
            // an operator's pause taken meanwhile.
            let pause = EndpointLifecycle.next(from: work.endpoint?.state ?? .active, on: .deliveryDied(reason: pauseReason))
            return (
                decision,
                DeliveryChange(
                    deliveryId: id, attempt: attempt, to: .dead, nextAttemptAt: nil, firstAttemptAt: first,
                    job: JobLifecycle.ending(.completed(reason: JobReason.webhookDeadLetter)),
                    pause: pause.map { (endpointId: work.delivery.endpointId, transition: $0) })
            )
        }
    }
}
