import Foundation

/// A 95 % interval for the mean of per-customer amounts (revenue per customer), in micro-units.
/// Revenue is skewed (most customers pay nothing, a few pay much), so for up to
/// `bootstrapLimit` customers the interval is a percentile bootstrap: `resamples` resamples of
/// the customers with replacement, drawn by a generator seeded from the caller's seed, so the
/// same amounts always give the same interval (docs/EXPERIMENTS.md). Beyond that many customers
/// the mean's distribution is normal to well within the bootstrap's own noise, and resampling
/// would cost seconds, so the interval is the normal one (mean ± 1.96 standard errors).
public struct MeanInterval: Codable, Hashable, Sendable {
    public enum Method: String, Codable, Sendable {
        case bootstrap
        case normal
    }

    public var lowerMicros: Int64
    public var upperMicros: Int64
    public var method: Method

    public static let resamples = 1_000
    public static let bootstrapLimit = 5_000

    /// Nil without customers. Bounds are rounded outward to whole micro-units.
    public init?(amounts: [Int64], seed: UInt64) {
        guard !amounts.isEmpty else { return nil }
        let values = amounts.map(Double.init)
        let count = values.count
        var bounds: (Double, Double)
        if count <= Self.bootstrapLimit {
            var generator = SplitMix64(state: seed)
            var means = [Double]()
            means.reserveCapacity(Self.resamples)
            for _ in 0..<Self.resamples {
                var sum = 0.0
                for _ in 0..<count { sum += values[Int(generator.next() % UInt64(count))] }
                means.append(sum / Double(count))
            }
            means.sort()
            // The 2.5th and 97.5th percentiles: the 25th and the 975th of 1,000 sorted means.
            bounds = (means[Self.resamples * 25 / 1_000 - 1], means[Self.resamples * 975 / 1_000 - 1])
            method = .bootstrap
        } else {
            let mean = values.reduce(0, +) / Double(count)
            let variance = values.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(count - 1)
            let margin = 1.959_964 * (variance / Double(count)).squareRoot()
            bounds = (mean - margin, mean + margin)
            method = .normal
        }
        lowerMicros = Int64(bounds.0.rounded(.down))
        upperMicros = Int64(bounds.1.rounded(.up))
    }
}
