import Foundation
import Synchronization

/// Token buckets by name (a client key, a user), in this process's memory. Several server
/// processes each allow the full rate; the limit is a guard against a runaway or hostile app,
/// not a quota. Time is an input, so tests run at fixed instants.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var at: Date
    }

    private let buckets = Mutex<[String: Bucket]>([:])
    /// Most buckets kept; at the bound every bucket is forgotten (each starts full again), so a
    /// flood of distinct users cannot grow memory without bound.
    let capacity: Int

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// Seconds until `name`'s bucket holds a token again, taking nothing; nil when it holds one.
    func wait(_ name: String, ratePerSecond: Double, burst: Double, now: Date) -> TimeInterval? {
        buckets.withLock { buckets in
            guard let bucket = buckets[name] else { return nil }
            let tokens = min(burst, bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * ratePerSecond)
            return tokens >= 1 ? nil : (1 - tokens) / ratePerSecond
        }
    }

    /// Takes one token from `name`'s bucket (refilled at `ratePerSecond`, holding `burst`).
    /// Nil when allowed; otherwise the seconds until a token is back.
    func take(_ name: String, ratePerSecond: Double, burst: Double, now: Date) -> TimeInterval? {
        buckets.withLock { buckets in
            var bucket = buckets[name] ?? Bucket(tokens: burst, at: now)
            let elapsed = max(0, now.timeIntervalSince(bucket.at))
            bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerSecond)
            bucket.at = now
            defer {
                if buckets[name] == nil, buckets.count >= capacity { buckets.removeAll(keepingCapacity: true) }
                buckets[name] = bucket
            }
            guard bucket.tokens >= 1 else { return (1 - bucket.tokens) / ratePerSecond }
            bucket.tokens -= 1
            return nil
        }
    }
}
