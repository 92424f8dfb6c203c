import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain
import Synchronization

/// One attempt of one delivery per lease: wait behind an earlier event of the same subscriber
/// or a paused endpoint, else POST the event signed and record what happened in the job's
/// transaction. At least once: a runner that dies after the POST and before the record makes
/// the next runner POST again, with the same `webhook-id`. Leases leased together are read
/// together (one read for the batch); each is sent and recorded on its own.
struct WebhookDeliveryJobHandler: BatchJobHandler {
    let kind = deliverWebhookJobKind
    let outcomes: WebhookDeliveryOutcomes
    let sender: WebhookSender
    /// How long a held delivery waits before looking again: at a paused endpoint, or at a dead
    /// earlier event of its subscriber (`webhooks.heldRecheckSeconds`). Resume, replay and skip
    /// make held deliveries due at once; one that was running at that moment ends with this
    /// wait, so it bounds how late such a delivery goes.
    var heldRecheckSeconds: Double = 60
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    func run(_ lease: JobLease) async -> JobOutcome {
        let outcome = Mutex<JobOutcome>(.finishedByHandler)
        await run(batch: [lease]) { _, ended in outcome.withLock { $0 = ended } }
        return outcome.withLock { $0 }
    }

    func run(batch leases: [JobLease], done: @escaping @Sendable (JobLease, JobOutcome) async -> Void) async {
        let works: [String: DeliveryWork]
        do {
            works = try await outcomes.work(for: leases.map(\.jobId))
        } catch {
            logger.error("webhook deliveries could not be read", metadata: ["jobs": "\(leases.count)", "error": "\(error)"])
            for lease in leases { await done(lease, .retry(at: now().addingTimeInterval(5), reason: FailureReason.storageError.rawValue)) }
            return
        }
        await withDiscardingTaskGroup { group in
            for lease in leases {
                group.addTask {
                    let outcome: JobOutcome
                    do {
                        outcome = try await attempt(lease, work: works[lease.jobId])
                    } catch {
                        logger.error("webhook delivery failed to record", metadata: ["job": "\(lease.jobId)", "error": "\(error)"])
                        outcome = .retry(at: now().addingTimeInterval(5), reason: FailureReason.storageError.rawValue)
                    }
                    await done(lease, outcome)
                }
            }
        }
    }

    private func attempt(_ lease: JobLease, work: DeliveryWork?) async throws -> JobOutcome {
        guard let work, work.delivery.state == .pending else {
            return .completed  // Deleted with its endpoint, or already ended by another run.
        }
        guard let endpoint = work.endpoint else { return .completed }
        let at = now()
        if endpoint.state == .paused {
            return .retry(at: at.addingTimeInterval(heldRecheckSeconds), reason: JobReason.endpointPaused)
        }
        if work.earlierDead {
            // An earlier event of this subscriber is dead: nothing later goes before it, until an
            // operator replays it (then it goes first) or skips it.
            return .retry(at: at.addingTimeInterval(heldRecheckSeconds), reason: "waiting_for_dead_earlier_event")
        }
        if let earlier = work.earlierDueAt {
            // Order per subscriber: go right after the earlier event's next attempt.
            return .retry(at: max(earlier, at).addingTimeInterval(0.1), reason: JobReason.waitingForEarlierEvent)
        }
        let body: [UInt8] =
            switch work.payload {
            case .event(_, let body), .notification(_, let body): Array(body.utf8)
            }
        let result = await sender.send(
            url: endpoint.url, id: work.payload.id, body: body, secrets: endpoint.signingSecrets(at: at), now: at)
        let ended = now()
        let attempt = DeliveryAttempt(
            deliveryId: work.delivery.id, attempt: work.delivery.attempts + 1, at: at, status: result.status, latencyMs: result.latencyMs,
            error: result.error, responseExcerpt: result.excerpt)
        let decision = try await outcomes.finish(
            lease, work: work, outcome: result.outcome, attempt: attempt, now: ended, unitRandom: Double.random(in: 0..<1))
        let duration = Duration.milliseconds(result.latencyMs)
        switch decision {
        case .delivered: metrics.webhookAttempt(endpoint: endpoint.id, outcome: "delivered", duration: duration)
        case .retry: metrics.webhookAttempt(endpoint: endpoint.id, outcome: "retry", duration: duration)
        case .dead(let reason):
            metrics.webhookAttempt(endpoint: endpoint.id, outcome: "dead", duration: duration)
            logger.warning(
                "webhook delivery dead-lettered; endpoint paused",
                metadata: ["endpoint": "\(endpoint.id)", "delivery": "\(work.delivery.id)", "reason": "\(reason)"])
        case nil: break
        }
        return .finishedByHandler
    }
}
