import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// Experiments' assignment and intervals (issue #51): pure rules, at fixed instants and with
/// fixed seeds, so every figure below is the same on every run.
@Suite("experiments: assignment by weight, enrollment window, Wilson intervals")
struct ExperimentTests {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func experiment(_ id: String = "paywall_test", weights: [Int]) -> Experiment {
        Experiment(
            id: id, arms: weights.enumerated().map { Experiment.Arm(offering: "offering_\($0.offset)", weight: $0.element) }, startsAt: t0)
    }

    @Test("the bucket is the documented function: values computed apart from this code")
    func referenceBuckets() {
        #expect(Experiment.bucket(experimentId: "paywall_test", customerId: "alice") == 9_749_002_795_584_645_863)
        #expect(Experiment.bucket(experimentId: "exp", customerId: "élève") == 3_170_454_174_223_120_976)
        #expect(experiment(weights: [1, 1]).arm(for: "alice") == 1)
    }

    @Test(
        "weights are respected over 10,000 customers (random ids from a fixed seed, and sequential ids), within four standard deviations",
        arguments: [[1, 1], [20, 30, 50], [1, 1, 1, 1], [900, 100]])
    func weights(weights: [Int]) {
        var draws = SeededGenerator(seed: 42)
        let random = (0..<10_000).map { _ in String(draws.next(), radix: 36) }
        let sequential = (0..<10_000).map { "user-\($0)" }
        let split = experiment(weights: weights)
        let total = Double(weights.reduce(0, +))
        for customers in [random, sequential] {
            var counts = Array(repeating: 0, count: weights.count)
            for customer in customers { counts[split.arm(for: customer)] += 1 }
            for (arm, weight) in weights.enumerated() {
                let share = Double(weight) / total
                let expected = share * Double(customers.count)
                let deviation = (Double(customers.count) * share * (1 - share)).squareRoot()
                #expect(
                    abs(Double(counts[arm]) - expected) <= 4 * deviation, "arm \(arm): \(counts[arm]) of \(customers.count), expected \(expected)")
            }
        }
    }

    @Test("a customer's arm is the same every time; another experiment splits the same customers anew")
    func stability() {
        let first = experiment("first", weights: [1, 1])
        let second = experiment("second", weights: [1, 1])
        let customers = (0..<10_000).map { "$RCAnonymousID:\($0)" }
        #expect(customers.map(first.arm(for:)) == customers.map(first.arm(for:)))
        let agreeing = customers.filter { first.arm(for: $0) == second.arm(for: $0) }.count
        // Independent splits agree for about half the customers (binomial sd 50).
        #expect((4_800...5_200).contains(agreeing), "\(agreeing)")
        // Buckets fall on the arms by position: reordering a started experiment's arms would move
        // customers, which is why arms are fixed once it starts (docs/EXPERIMENTS.md).
        var reordered = first
        reordered.arms.reverse()
        #expect(customers.allSatisfy { first.arms[first.arm(for: $0)].offering == reordered.arms[reordered.arm(for: $0)].offering } == false)
    }

    @Test("shape: two to four arms, distinct offerings, weights 1-1000, an end after the start")
    func problems() {
        #expect(experiment(weights: [1, 1]).problems().isEmpty)
        #expect(experiment(weights: [1]).problems() == ["arms: 2-4"])
        #expect(experiment(weights: [1, 1, 1, 1, 1]).problems() == ["arms: 2-4"])
        #expect(experiment(weights: [0, 1001]).problems() == ["arms[0].weight: 1-1000", "arms[1].weight: 1-1000"])
        var same = experiment(weights: [1, 1])
        same.arms[1].offering = "offering_0"
        #expect(same.problems() == ["arms[1].offering: 'offering_0' is another arm's"])
        var ended = experiment(weights: [1, 1])
        ended.endsAt = t0
        #expect(ended.problems() == ["endsAt: after startsAt"])
        #expect(experiment("has space", weights: [1, 1]).problems().count == 1)
    }

    @Test("enrollment runs from the start (inclusive) to the end (exclusive)")
    func window() {
        var running = experiment(weights: [1, 1])
        #expect(!running.enrolls(at: t0.addingTimeInterval(-0.001)) && running.enrolls(at: t0))
        #expect(running.enrolls(at: t0.addingTimeInterval(86_400 * 365)), "no end: until stopped")
        running.endsAt = t0.addingTimeInterval(60)
        #expect(running.enrolls(at: t0.addingTimeInterval(59.999)) && !running.enrolls(at: t0.addingTimeInterval(60)))
    }

    @Test("Wilson intervals: reference values, the edges, and 95 % coverage over 2,000 draws from a fixed seed")
    func wilson() throws {
        let eight = try #require(ProportionInterval(successes: 8, trials: 10))
        #expect(abs(eight.lower - 0.490_162_471_536_641_8) < 1e-12 && abs(eight.upper - 0.943_317_848_545_624_7) < 1e-12)
        let some = try #require(ProportionInterval(successes: 120, trials: 1_000))
        #expect(abs(some.lower - 0.101_299_260_601_309_13) < 1e-12 && abs(some.upper - 0.141_609_075_847_712_76) < 1e-12)
        let none = try #require(ProportionInterval(successes: 0, trials: 10))
        #expect(none.lower == 0 && abs(none.upper - 0.277_532_799_862_889_2) < 1e-12)
        #expect(try #require(ProportionInterval(successes: 10, trials: 10)).upper <= 1)
        #expect(ProportionInterval(successes: 0, trials: 0) == nil && ProportionInterval(successes: 11, trials: 10) == nil)
        #expect(ProportionInterval(successes: -1, trials: 10) == nil)
        // Coverage: how often the interval holds the true rate.
        var draws = SeededGenerator(seed: 7)
        let truth = 0.3
        var covered = 0
        for _ in 0..<2_000 {
            let successes = (0..<200).filter { _ in draws.unit() < truth }.count
            if try #require(ProportionInterval(successes: successes, trials: 200)).contains(truth) { covered += 1 }
        }
        #expect((1_860...1_940).contains(covered), "\(covered) of 2,000 (95 % ± 2 points)")
    }
}

extension ExperimentTests {
    @Test("a stop is kept in whole milliseconds, taken downward: an answer in the same moment already shows it")
    func stopInstant() {
        let asked = Date(timeIntervalSince1970: 1_790_000_000.123_6)
        var stopped = experiment(weights: [1, 1])
        stopped.stoppedAt = Experiment.instant(asked)
        #expect(stopped.stoppedAt == Date(timeIntervalSince1970: 1_790_000_000.123))
        #expect(!stopped.shows(at: asked) && !stopped.enrolls(at: asked))
        #expect(stopped.shows(at: Date(timeIntervalSince1970: 1_790_000_000.122)))
    }
}
