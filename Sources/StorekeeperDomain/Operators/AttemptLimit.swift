public import Foundation

/// How many attempts a key (an operator's account, an address, a user's offer signatures) may
/// make before it is refused, and for how long. Counted from attempts kept in the database, so
/// every process refuses the same key at the same time and nothing can evict a lock. A refused
/// try is not made and not counted, so waiting is the only way on.
public struct AttemptLimit: Sendable, Hashable {
    public enum Kind: Sendable, Hashable {
        /// `maximum` failures within `window` lock the key until `window` after the last one.
        case lockout
        /// A token bucket of `maximum` refilled over `window`: `maximum / window` a second on
        /// average, the next try as soon as one token is back.
        case bucket
    }

    public var kind: Kind
    public var maximum: Int
    public var window: TimeInterval

    public init(kind: Kind, maximum: Int, window: TimeInterval) {
        self.kind = kind
        self.maximum = maximum
        self.window = window
    }

    /// The console's: five wrong passwords within 15 minutes lock the account for 15 minutes.
    public static let consoleSignIn = AttemptLimit(kind: .lockout, maximum: 5, window: 15 * 60)

    /// Offer signatures (promotional and introductory) for one user of one app: `perDay`, ten
    /// at most at once.
    public static func offerSignatures(perDay: Int) -> AttemptLimit {
        let maximum = max(1, min(10, perDay))
        return AttemptLimit(kind: .bucket, maximum: maximum, window: 86_400 * Double(maximum) / Double(max(1, perDay)))
    }

    /// Wrong admin credentials from one address: `ratePerSecond` on average, with a burst of ten
    /// times that (at least 10).
    public static func adminCredentials(ratePerSecond: Double) -> AttemptLimit {
        let maximum = max(10, Int((10 * ratePerSecond).rounded(.down)))
        return AttemptLimit(kind: .bucket, maximum: maximum, window: Double(maximum) / ratePerSecond)
    }

    /// When the key may try again, given its attempts within `window` before `now`; nil when it
    /// may now.
    public func blockedUntil(_ failures: [Date], now: Date) -> Date? {
        let recent = failures.filter { $0 <= now && now.timeIntervalSince($0) < window }.sorted()
        switch kind {
        case .lockout:
            guard recent.count >= maximum, let last = recent.last else { return nil }
            return last.addingTimeInterval(window)
        case .bucket:
            // The bucket was full at the window's start (an older failure has refilled since).
            let rate = Double(maximum) / window
            var tokens = Double(maximum)
            var at = now.addingTimeInterval(-window)
            for failure in recent {
                tokens = min(Double(maximum), tokens + failure.timeIntervalSince(at) * rate) - 1
                at = failure
            }
            tokens = min(Double(maximum), tokens + now.timeIntervalSince(at) * rate)
            return tokens >= 1 ? nil : now.addingTimeInterval((1 - tokens) / rate)
        }
    }
}
