public import AppStoreModels
public import Foundation
import Synchronization

/// Keeps one app's calls within Apple's published limits (`ServerAPIEndpoint`), per endpoint and
/// environment, so a bulk job (an import of thousands of customers, a gap fill) slows itself
/// down instead of collecting 429s; a 429 that comes anyway holds every caller of that endpoint
/// until its `Retry-After`. Shared by every task calling for the app.
public final class ServerAPIThrottle: Sendable {
    struct Key: Hashable {
        var endpoint: ServerAPIEndpoint
        var environment: String
    }

    /// The share of Apple's published limits used (1: all of them; less leaves room for other
    /// systems calling with the same app's key).
    public let share: Double
    private let buckets = Mutex<[Key: TokenBucket]>([:])

    public init(share: Double = 1) {
        self.share = share
    }

    /// When a call to `endpoint` may be sent, reserving its place (`now` or later); nothing is
    /// reserved when that is after `notAfter`.
    public func reserve(
        _ endpoint: ServerAPIEndpoint, in environment: AppStoreEnvironment, now: Date, notAfter: Date = .distantFuture
    ) -> TokenBucket.Reservation {
        let rate = endpoint.requestsPerSecond(in: environment) * share
        return buckets.withLock { buckets in
            let key = Key(endpoint: endpoint, environment: environment.storageName)
            var bucket = buckets[key] ?? TokenBucket(rate: rate, capacity: max(1, rate), now: now)
            let reservation = bucket.reserve(now: now, notAfter: notAfter)
            buckets[key] = bucket
            return reservation
        }
    }

    /// Apple answered 429: no call to `endpoint` leaves before `until`.
    public func hold(_ endpoint: ServerAPIEndpoint, in environment: AppStoreEnvironment, until: Date) {
        let rate = endpoint.requestsPerSecond(in: environment) * share
        buckets.withLock { buckets in
            let key = Key(endpoint: endpoint, environment: environment.storageName)
            var bucket = buckets[key] ?? TokenBucket(rate: rate, capacity: max(1, rate), now: until)
            bucket.hold(until: until)
            buckets[key] = bucket
        }
    }
}

/// A token bucket that hands out reservations: `capacity` calls at once, then `rate` per
/// second. A reservation beyond the tokens left is given a later instant (the tokens go
/// negative), so callers queue in order instead of retrying. Pure: time is an input.
public struct TokenBucket: Sendable, Hashable {
    public let rate: Double
    public let capacity: Double
    /// Tokens at `updated`; negative while reservations wait.
    private(set) var tokens: Double
    private(set) var updated: Date

    public init(rate: Double, capacity: Double, now: Date) {
        self.rate = max(rate, 0.001)
        self.capacity = max(capacity, 1)
        self.tokens = self.capacity
        self.updated = now
    }

    public enum Reservation: Sendable, Hashable {
        /// Taken: the call may go at this instant.
        case at(Date)
        /// Not taken: the first free instant lies after the caller's bound.
        case notBefore(Date)
    }

    /// Takes one token: the instant the call may go (`now` when one was left), unless that
    /// lies after `notAfter`.
    public mutating func reserve(now: Date, notAfter: Date = .distantFuture) -> Reservation {
        refill(to: now)
        let left = tokens - 1
        let at = max(now, updated).addingTimeInterval(left < 0 ? -left / rate : 0)
        guard at <= notAfter else { return .notBefore(at) }
        tokens = left
        return .at(at)
    }

    /// Nothing newly reserved leaves before `until`; then one at once, the rest at the rate.
    /// (Reservations already handed out keep their instants: if Apple refuses them too, their
    /// callers hold again.)
    public mutating func hold(until: Date) {
        guard until > updated else { return }
        tokens = 1
        updated = until
    }

    private mutating func refill(to now: Date) {
        guard now > updated else { return }
        tokens = min(capacity, tokens + now.timeIntervalSince(updated) * rate)
        updated = now
    }
}
