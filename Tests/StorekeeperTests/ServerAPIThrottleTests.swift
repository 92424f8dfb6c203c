import AppStoreClient
import AppStoreModels
import Foundation
import Testing

/// The throttle's arithmetic at fixed instants: no clock, no sleeping.
@Suite("Server API throttle: Apple's published limits as reservations")
struct ServerAPIThrottleTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func instant(_ reservation: TokenBucket.Reservation) -> Date? {
        if case .at(let at) = reservation { return at }
        return nil
    }

    @Test("a full bucket lets `capacity` go at once, then one per 1/rate; idle time refills it, never past capacity")
    func spacing() {
        var bucket = TokenBucket(rate: 5, capacity: 5, now: t0)
        let first = (0..<7).map { _ in instant(bucket.reserve(now: t0)) }
        #expect(first == [t0, t0, t0, t0, t0, t0.addingTimeInterval(0.2), t0.addingTimeInterval(0.4)])
        // Ten seconds idle: five at once again, not fifty.
        let later = t0.addingTimeInterval(10)
        let second = (0..<6).map { _ in instant(bucket.reserve(now: later)) }
        #expect(second == [later, later, later, later, later, later.addingTimeInterval(0.2)])
    }

    @Test("a reservation later than the caller's bound is refused and takes nothing")
    func bound() {
        var bucket = TokenBucket(rate: 1, capacity: 1, now: t0)
        #expect(instant(bucket.reserve(now: t0)) == t0)
        #expect(bucket.reserve(now: t0, notAfter: t0.addingTimeInterval(0.5)) == .notBefore(t0.addingTimeInterval(1)))
        #expect(instant(bucket.reserve(now: t0, notAfter: t0.addingTimeInterval(1))) == t0.addingTimeInterval(1))
    }

    @Test("a hold (Apple's Retry-After) moves the next reservation to its end; an earlier hold changes nothing")
    func hold() {
        var bucket = TokenBucket(rate: 10, capacity: 10, now: t0)
        bucket.hold(until: t0.addingTimeInterval(3))
        bucket.hold(until: t0.addingTimeInterval(1))
        #expect(instant(bucket.reserve(now: t0)) == t0.addingTimeInterval(3))
        #expect(instant(bucket.reserve(now: t0)) == t0.addingTimeInterval(3).addingTimeInterval(0.1))
    }

    @Test("the published table: 50/s for history in production, a tenth in the sandbox; a share scales them")
    func published() {
        #expect(ServerAPIEndpoint.getTransactionHistory.requestsPerSecond(in: .production) == 50)
        #expect(ServerAPIEndpoint.getTransactionHistory.requestsPerSecond(in: .sandbox) == 5)
        #expect(ServerAPIEndpoint.lookUpOrderId.productionRequestsPerSecond == 10)
        #expect(ServerAPIEndpoint.requestTestNotification.requestsPerSecond(in: .sandbox) == 0.1)
        let throttle = ServerAPIThrottle(share: 0.5)
        let times = (0..<27).map { _ in instant(throttle.reserve(.getTransactionHistory, in: .production, now: t0)) }
        #expect(times.prefix(25).allSatisfy { $0 == t0 } && times[25] == t0.addingTimeInterval(0.04) && times[26] == t0.addingTimeInterval(0.08))
    }
}
