import Foundation

/// The probability that each arm's true conversion rate is the highest, given what was seen:
/// independent Beta(1 + successes, 1 + failures) posteriors (a uniform prior on each rate),
/// estimated from `draws` joint draws of a generator seeded from the experiment's id, so the
/// same counts always give the same figures (docs/EXPERIMENTS.md).
public enum ProbabilityBest {
    public static let draws = 20_000

    /// One probability per arm, summing to 1; empty for no arms. Ties between draws (only
    /// possible in theory) go to the first arm.
    public static func conversion(successes: [Int], trials: [Int], seed: UInt64) -> [Double] {
        guard !successes.isEmpty, successes.count == trials.count else { return [] }
        var generator = SplitMix64(state: seed)
        var wins = Array(repeating: 0, count: successes.count)
        let shapes = zip(successes, trials).map { success, trial in
            (Double(1 + max(0, success)), Double(1 + max(0, trial - success)))
        }
        for _ in 0..<draws {
            var best = 0
            var bestRate = -1.0
            for (index, shape) in shapes.enumerated() {
                let x = gamma(shape: shape.0, &generator)
                let y = gamma(shape: shape.1, &generator)
                let rate = x / (x + y)
                if rate > bestRate { (best, bestRate) = (index, rate) }
            }
            wins[best] += 1
        }
        return wins.map { Double($0) / Double(draws) }
    }

    /// The seed an experiment's draws start from, derived from its id alone, so a result can be
    /// reproduced from the id and the counts alone.
    public static func seed(experimentId: String) -> UInt64 {
        Experiment.bucket(experimentId: experimentId, customerId: "probability-best")
    }

    /// Marsaglia and Tsang's method (shape ≥ 1, which a uniform prior guarantees).
    static func gamma(shape: Double, _ generator: inout SplitMix64) -> Double {
        let d = shape - 1.0 / 3.0
        let c = 1.0 / (9.0 * d).squareRoot()
        while true {
            var x: Double
            var v: Double
            repeat {
                x = normal(&generator)
                v = 1.0 + c * x
            } while v <= 0
            v = v * v * v
            let u = generator.unit()
            if u < 1 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1 - v + log(v)) { return d * v }
        }
    }

    /// A standard normal draw (Box–Muller).
    static func normal(_ generator: inout SplitMix64) -> Double {
        let u1 = max(generator.unit(), Double.leastNonzeroMagnitude)
        let u2 = generator.unit()
        return (-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2)
    }
}

/// SplitMix64: a small generator whose sequence is the same on every machine.
struct SplitMix64 {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return StableHash.mix(state)
    }

    /// In 0..<1, 53 random bits.
    mutating func unit() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
}
