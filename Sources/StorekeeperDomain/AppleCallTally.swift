public import Foundation

/// The calls made to one of Apple's endpoints in one period that ended one way: how many, their
/// total latency and a histogram over fixed bounds. Fixed bounds make tallies from any process
/// and any minute add up by plain addition (in memory and in SQL), and percentiles are read off
/// the histogram: a percentile is reported as the bound of the bucket it falls in, an upper bound
/// on the true figure, which is what an operator watching for slowness needs.
public struct AppleCallTally: Sendable, Hashable {
    /// The endpoint as Apple's health names it: `verify_receipt_production`, `server_api_sandbox`,
    /// `ocsp`.
    public var endpoint: String
    /// How the call ended: Apple's status for verifyReceipt (`0`, `21007`), `http_<code>`
    /// otherwise, `timeout` or `connection_failed` when nothing was answered.
    public var outcome: String
    /// The start of the period (a whole minute as recorded; a whole hour when read by hour).
    public var period: Date
    public var count: Int64
    /// Sum of the calls' latencies, in milliseconds (the mean is `totalMilliseconds / count`).
    public var totalMilliseconds: Int64
    /// Calls per bucket: `buckets[i]` counts latencies ≤ `bucketBounds[i]` ms (and above the
    /// previous bound); the last counts every call above the largest bound.
    public var buckets: [Int64]

    /// Upper bounds of the buckets in milliseconds, the last bucket open above them. Changing
    /// them changes the meaning of stored rows: add a migration that re-buckets, never edit.
    public static let bucketBounds: [Int64] = [25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000]
    public static var bucketCount: Int { bucketBounds.count + 1 }
    /// How long tallies are kept in the database.
    public static let keptSeconds: TimeInterval = 30 * 86_400

    public init(endpoint: String, outcome: String, period: Date, count: Int64 = 0, totalMilliseconds: Int64 = 0, buckets: [Int64]? = nil) {
        self.endpoint = endpoint
        self.outcome = outcome
        self.period = period
        self.count = count
        self.totalMilliseconds = totalMilliseconds
        let given = buckets ?? []
        self.buckets = (0..<Self.bucketCount).map { $0 < given.count ? given[$0] : 0 }
    }

    /// The start of the whole minute (Apple's milliseconds, UTC) that contains `instant`.
    public static func minute(of instant: Date) -> Date { truncated(instant, toMilliseconds: 60_000) }
    /// The start of the whole hour that contains `instant`.
    public static func hour(of instant: Date) -> Date { truncated(instant, toMilliseconds: 3_600_000) }

    private static func truncated(_ instant: Date, toMilliseconds unit: Int64) -> Date {
        let ms = Int64((instant.timeIntervalSince1970 * 1_000).rounded(.down))
        let start = ms - ((ms % unit) + unit) % unit
        return Date(timeIntervalSince1970: TimeInterval(start) / 1_000)
    }

    /// The bucket a latency of `milliseconds` falls in.
    public static func bucket(milliseconds: Int64) -> Int {
        bucketBounds.firstIndex { milliseconds <= $0 } ?? bucketBounds.count
    }

    /// Counts one call that took `milliseconds` (negative counts as 0: a clock that stepped back).
    public mutating func add(milliseconds: Int64) {
        let latency = max(0, milliseconds)
        count += 1
        totalMilliseconds += latency
        buckets[Self.bucket(milliseconds: latency)] += 1
    }

    /// Adds another tally's calls (whatever its endpoint, outcome or period: the caller groups).
    public mutating func add(_ other: AppleCallTally) {
        count += other.count
        totalMilliseconds += other.totalMilliseconds
        for index in 0..<Self.bucketCount where index < other.buckets.count { buckets[index] += other.buckets[index] }
    }

    /// The latency under which `fraction` (0…1) of the calls fell, as the bound of the bucket the
    /// call of that rank is in: nil without calls, `.above(30000)` when it lies past every bound.
    public func percentile(_ fraction: Double) -> Percentile? {
        guard count > 0 else { return nil }
        // The rank of the call at `fraction` (1-based, nearest rank): p50 of 4 calls is the 2nd.
        let rank = max(1, Int64((Double(count) * min(max(fraction, 0), 1)).rounded(.up)))
        var seen: Int64 = 0
        for (index, calls) in buckets.enumerated() {
            seen += calls
            if seen >= rank {
                return index < Self.bucketBounds.count ? .atMost(Self.bucketBounds[index]) : .above(Self.bucketBounds[Self.bucketBounds.count - 1])
            }
        }
        return .above(Self.bucketBounds[Self.bucketBounds.count - 1])
    }

    /// A percentile read off the histogram.
    public enum Percentile: Sendable, Hashable, CustomStringConvertible {
        /// At most this many milliseconds.
        case atMost(Int64)
        /// Above the largest bound.
        case above(Int64)

        public var description: String {
            switch self {
            case .atMost(let ms): "≤ \(ms) ms"
            case .above(let ms): "> \(ms) ms"
            }
        }
    }

    /// Tallies of any periods regrouped into whole hours, one per endpoint, outcome and hour,
    /// newest hour first, then by endpoint and outcome.
    public static func byHour(_ tallies: [AppleCallTally]) -> [AppleCallTally] {
        var merged: [Key: AppleCallTally] = [:]
        for tally in tallies {
            let hour = Self.hour(of: tally.period)
            let key = Key(endpoint: tally.endpoint, outcome: tally.outcome, period: hour)
            merged[key, default: AppleCallTally(endpoint: tally.endpoint, outcome: tally.outcome, period: hour)].add(tally)
        }
        return merged.values.sorted {
            ($0.period, $1.endpoint, $1.outcome) > ($1.period, $0.endpoint, $0.outcome)
        }
    }

    /// What identifies a tally: tallies with the same key add up.
    public struct Key: Sendable, Hashable {
        public var endpoint: String
        public var outcome: String
        public var period: Date

        public init(endpoint: String, outcome: String, period: Date) {
            self.endpoint = endpoint
            self.outcome = outcome
            self.period = period
        }
    }

    public var key: Key { Key(endpoint: endpoint, outcome: outcome, period: period) }
}
