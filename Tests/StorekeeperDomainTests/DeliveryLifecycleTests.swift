import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

@Suite("webhook delivery lifecycle")
struct DeliveryLifecycleTests {
    let t0 = referenceTime
    let schedule = WebhookRetrySchedule.standard

    @Test("the standard schedule retries for at least three days, exponentially, then dead-letters")
    func standardSchedule() {
        var at = t0
        var attempt = 1
        var waits: [Double] = []
        while case .retry(let next) = DeliveryLifecycle.next(
            after: .failed(status: 500, retryAfter: nil), attempt: attempt, firstAttemptAt: t0, now: at, schedule: schedule, unitRandom: 0.5)
        {
            waits.append(next.timeIntervalSince(at))
            at = next
            attempt += 1
        }
        // `at` is the schedule's own arithmetic from the fixed instant t0, not a measured time.
        #expect(at >= t0.addingTimeInterval(schedule.maximumAge), "retried until the schedule's maximum age from the first attempt")
        #expect(schedule.maximumAge == 3 * 86_400, "the standard schedule's maximum age is three days")
        #expect(Array(waits.prefix(4)) == [5, 30, 120, 600])
        #expect(zip(waits, waits.dropFirst()).allSatisfy { $0 <= $1 }, "never shorter than the wait before")
        #expect((15...20).contains(attempt), "\(attempt) attempts")
        #expect(
            DeliveryLifecycle.next(
                after: .failed(status: nil, retryAfter: nil), attempt: attempt, firstAttemptAt: t0, now: at, schedule: schedule,
                unitRandom: 0.5) == .dead(pauseReason: DeliveryLifecycle.failingReason))
    }

    @Test("jitter stays within its bounds; Retry-After lengthens a wait up to its cap, never shortens it")
    func jitterAndRetryAfter() {
        #expect(schedule.delay(afterAttempt: 1, unitRandom: 0) == 4)
        #expect(abs(schedule.delay(afterAttempt: 1, unitRandom: 0.999_999) - 6) < 0.001)
        #expect(schedule.delay(afterAttempt: 40, unitRandom: 0.5) == 28_800)
        func wait(_ retryAfter: Double?) -> Double? {
            guard
                case .retry(let at) = DeliveryLifecycle.next(
                    after: .failed(status: 503, retryAfter: retryAfter), attempt: 1, firstAttemptAt: t0, now: t0, schedule: schedule,
                    unitRandom: 0.5)
            else { return nil }
            return at.timeIntervalSince(t0)
        }
        #expect(wait(nil) == 5 && wait(1) == 5 && wait(120) == 120 && wait(10 * 86_400) == 86_400 && wait(.infinity) == 5)
    }

    @Test("a 2xx delivers; 410 dead-letters at once and pauses the endpoint")
    func deliveredAndGone() {
        #expect(
            DeliveryLifecycle.next(
                after: .delivered(status: 204), attempt: 9, firstAttemptAt: t0, now: t0 + 86_400, schedule: schedule, unitRandom: 0)
                == .delivered)
        #expect(
            DeliveryLifecycle.next(after: .gone, attempt: 1, firstAttemptAt: t0, now: t0, schedule: schedule, unitRandom: 0)
                == .dead(pauseReason: DeliveryLifecycle.goneReason))
    }

    @Test("an endpoint takes its app's events that pass its filters; test events only where asked")
    func routing() {
        let endpoint = WebhookEndpoint(
            id: "e", appId: "app", url: "https://example.com", environments: ["production"], eventTypes: [.refund, .verificationInvalid],
            secrets: [.init(value: "whsec_a", createdAt: t0), .init(value: "whsec_b", createdAt: t0, expiresAt: t0 + 60)], createdAt: t0,
            updatedAt: t0)
        func event(_ type: EventType, environment: String? = "production", app: String = "app") -> SubscriberEvent {
            SubscriberEvent(id: "x", type: type, appId: app, environment: environment, appUserId: "u", occurredAt: t0, recordedAt: t0)
        }
        #expect(endpoint.accepts(event(.refund)))
        #expect(!endpoint.accepts(event(.refund, environment: "sandbox")) && !endpoint.accepts(event(.refund, app: "other")))
        #expect(!endpoint.accepts(event(.renewal)) && !endpoint.accepts(event(.test)))
        #expect(endpoint.accepts(event(.verificationInvalid, environment: nil)), "no environment passes the filter")
        #expect(endpoint.signingSecrets(at: t0) == ["whsec_a", "whsec_b"] && endpoint.signingSecrets(at: t0 + 60) == ["whsec_a"])
    }
}
