/// A 95 % interval for a proportion (trial conversion, initial conversion, refunds among
/// payers) by Wilson's score method: unlike the normal approximation it stays inside 0…1 and
/// keeps its coverage at the small counts an experiment starts with, and at 0 or n successes.
/// Statistics, not money: a `Double` is the right type here.
public struct ProportionInterval: Hashable, Sendable {
    public var successes: Int
    public var trials: Int
    public var lower: Double
    public var upper: Double

    /// The two-sided 97.5th percentile of the standard normal distribution.
    public static let z95 = 1.959963984540054

    /// nil when there are no trials (nothing to estimate) or the counts are impossible.
    public init?(successes: Int, trials: Int, z: Double = ProportionInterval.z95) {
        guard trials > 0, (0...trials).contains(successes) else { return nil }
        let n = Double(trials)
        let p = Double(successes) / n
        let z2 = z * z
        let denominator = 1 + z2 / n
        let centre = (p + z2 / (2 * n)) / denominator
        let half = z * (p * (1 - p) / n + z2 / (4 * n * n)).squareRoot() / denominator
        self.successes = successes
        self.trials = trials
        self.lower = max(0, centre - half)
        self.upper = min(1, centre + half)
    }

    public var estimate: Double { Double(successes) / Double(trials) }

    public func contains(_ value: Double) -> Bool { (lower...upper).contains(value) }
}
