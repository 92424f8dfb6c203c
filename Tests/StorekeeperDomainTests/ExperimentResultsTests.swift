import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// An experiment's results from ledger entries at fixed instants: what counts for an arm, and
/// what does not (a purchase before enrollment, a customer counted twice, a horizon not reached).
@Suite("experiments: results per arm from the ledger")
struct ExperimentResultsTests {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    let day: TimeInterval = 86_400

    var experiment: Experiment {
        Experiment(id: "pricing", arms: [.init(offering: "a", weight: 1), .init(offering: "b", weight: 1)], startsAt: t0)
    }

    func enrolled(_ user: String, arm: Int, after days: Double = 0) -> ExperimentEnrollment {
        ExperimentEnrollment(
            experimentId: "pricing", appUserId: user, arm: arm, offering: arm == 0 ? "a" : "b", enrolledAt: t0.addingTimeInterval(days * day))
    }

    func entry(
        _ user: String, _ days: Double, _ event: LedgerEntry.Event = .purchase, price: Int64, proceeds: Int64? = nil, currency: String = "USD",
        original: String, trial: Bool = false
    ) -> LedgerEntry {
        var entry = LedgerEntry(
            appId: "app", appUserId: user, productId: "pro", productType: .autoRenewable, transactionId: "\(user)-\(days)-\(event)",
            originalTransactionId: original, environment: "Production", purchaseDate: t0.addingTimeInterval(days * day), event: event, quantity: 1,
            priceMicros: price, currency: currency, state: "verified", recordedAt: t0)
        entry.proceedsMicros = proceeds
        if trial { entry.offer = PurchaseOffer(type: PurchaseOffer.introductory, discountType: PurchaseOffer.freeTrial) }
        return entry
    }

    @Test("counts, conversions with intervals and revenue per customer at each horizon reached; nothing before enrollment, no one twice")
    func results() throws {
        let enrollments = [
            enrolled("a0", arm: 0), enrolled("a1", arm: 0), enrolled("b0", arm: 1), enrolled("b1", arm: 1, after: 80),
            // a0 again under the other arm, later (an id linked since): the earlier counts.
            enrolled("a0", arm: 1, after: 2),
        ]
        let ledger = [
            entry("a0", 1, price: 0, original: "s1", trial: true),
            entry("a0", 8, price: 9_990_000, proceeds: 6_993_000, original: "s1"),
            entry("a1", -1, price: 9_990_000, proceeds: 6_993_000, original: "s2"),
            entry("b0", 2, price: 4_990_000, proceeds: 3_493_000, original: "c1"),
            entry("b0", 3, .refund, price: -4_990_000, proceeds: -3_493_000, original: "c1"),
            entry("b1", 81, price: 5_000_000, proceeds: 3_500_000, currency: "EUR", original: "c2"),
            entry("nobody", 1, price: 1_000_000, original: "c3"),
        ]
        let results = ExperimentResults.compute(
            experiment: experiment, enrollments: enrollments, ledger: ledger, now: t0.addingTimeInterval(95 * day))
        let a = results.arms[0]
        let b = results.arms[1]
        #expect((a.enrolled, a.payingCustomers, a.trialsStarted, a.refundedCustomers) == (2, 1, 1, 0))
        #expect((b.enrolled, b.payingCustomers, b.trialsStarted, b.refundedCustomers) == (2, 2, 0, 1))
        #expect(a.trialConversion.successes == 1 && a.trialConversion.trials == 1 && a.trialConversion.upper == 1)
        #expect(b.trialConversion.trials == 0 && b.trialConversion.estimate == nil && b.trialConversion.lower == nil)
        #expect(a.initialConversion.estimate == 0.5 && b.refundRate.estimate == 0.5)
        let interval = try #require(ProportionInterval(successes: 1, trials: 2))
        #expect(a.initialConversion.lower == interval.lower && a.initialConversion.upper == interval.upper)

        func revenue(_ arm: ExperimentResults.Arm, _ days: Int) -> [String: ExperimentResults.Revenue] {
            Dictionary(uniqueKeysWithValues: arm.revenue.filter { $0.days == days }.map { ($0.currency, $0) })
        }
        // a0's trial (free) falls in the first week, the first payment on day 8: a1's purchase
        // before enrollment never counts.
        #expect(revenue(a, 7)["USD"].map { ($0.customers, $0.grossMicros) }! == (2, 0))
        let a14 = try #require(revenue(a, 14)["USD"])
        #expect(
            (a14.grossMicros, a14.proceedsMicros, a14.grossPerCustomerMicros, a14.proceedsPerCustomerMicros) == (
                9_990_000, 6_993_000, 4_995_000, 3_496_500
            ))
        // b0's refund takes its purchase back; b1 (enrolled on day 80) reaches day 7 only.
        let b7 = revenue(b, 7)
        #expect(b7["USD"].map { ($0.customers, $0.grossMicros) }! == (2, 0))
        #expect(b7["EUR"].map { ($0.grossMicros, $0.grossPerCustomerMicros) }! == (5_000_000, 2_500_000))
        #expect(revenue(b, 30).keys.sorted() == ["USD"] && revenue(b, 30)["USD"]?.customers == 1)
        #expect(revenue(a, 90)["USD"]?.customers == 2, "day 90 passed for both")
        #expect(a.reportingRevenue == nil && results.missingRates == nil, "no reporting currency, no conversion")

        // In the reporting currency (USD): b1's 5.00 EUR of December at 1.10 is 5.50; without
        // December's rate it is left out and named.
        let inDollars = ExperimentResults.compute(
            experiment: experiment, enrollments: enrollments, ledger: ledger, now: t0.addingTimeInterval(95 * day),
            reporting: ReportingCurrency(currency: "USD", rates: ["2026-12": ["EUR": "1.10"]]))
        let b7Reported = try #require(inDollars.arms[1].reportingRevenue?.first { $0.days == 7 })
        #expect(b7Reported.currency == "USD" && b7Reported.grossMicros == 5_500_000 && b7Reported.proceedsMicros == 3_850_000, "\(b7Reported)")
        #expect(inDollars.arms[1].reportingRevenue?.filter { $0.days == 7 }.count == 1, "one currency: the reporting one")
        #expect(inDollars.arms[0].reportingRevenue?.first { $0.days == 14 }?.grossMicros == 9_990_000 && inDollars.missingRates == nil)
        let unrated = ExperimentResults.compute(
            experiment: experiment, enrollments: enrollments, ledger: ledger, now: t0.addingTimeInterval(95 * day),
            reporting: ReportingCurrency(currency: "USD"))
        #expect(unrated.missingRates == ["2026-12 EUR"] && unrated.arms[1].reportingRevenue?.first { $0.days == 7 }?.grossMicros == 0)
    }

    @Test("no enrollments: every arm empty, no intervals, no revenue")
    func empty() {
        let results = ExperimentResults.compute(experiment: experiment, enrollments: [], ledger: [], now: t0)
        #expect(results.arms.map(\.enrolled) == [0, 0] && results.arms.allSatisfy { $0.revenue.isEmpty && $0.initialConversion.estimate == nil })
    }
}

extension ExperimentResultsTests {
    @Test("probability best: a clear winner near 1, equal arms near even, no data near even; the same counts give the same figures")
    func probabilityBest() {
        let clear = ProbabilityBest.conversion(successes: [200, 100], trials: [1_000, 1_000], seed: 1)
        #expect(clear[0] > 0.999 && abs(clear.reduce(0, +) - 1) < 1e-9, "\(clear)")
        let even = ProbabilityBest.conversion(successes: [100, 100], trials: [1_000, 1_000], seed: 1)
        #expect(abs(even[0] - 0.5) < 0.03, "\(even)")
        let four = ProbabilityBest.conversion(successes: [0, 0, 0, 0], trials: [0, 0, 0, 0], seed: 2)
        #expect(four.allSatisfy { abs($0 - 0.25) < 0.03 }, "\(four)")
        // Close arms: B (11 % of 2,000) against A (10 %): most of the mass on B, not all of it.
        let close = ProbabilityBest.conversion(successes: [200, 220], trials: [2_000, 2_000], seed: 3)
        #expect(close[1] > 0.8 && close[1] < 0.99, "\(close)")
        #expect(ProbabilityBest.conversion(successes: [200, 220], trials: [2_000, 2_000], seed: 3) == close)
        #expect(ProbabilityBest.conversion(successes: [], trials: [], seed: 3).isEmpty)
        let results = ExperimentResults.compute(experiment: experiment, enrollments: [], ledger: [], now: t0)
        #expect(abs(results.arms.map(\.probabilityBest).reduce(0, +) - 1) < 1e-9)
    }
}

extension ExperimentResultsTests {
    @Test(
        "revenue per customer: the bootstrap interval covers the true mean about 95 % of the time; the same amounts give the same interval; normal beyond 5,000"
    )
    func meanInterval() throws {
        // Customers who pay 4.99 with probability 0.3, else nothing: true mean 1.497.
        let truth = 1_497_000
        var generator = SeededGenerator(seed: 7)
        var covered = 0
        let samples = 200
        for sample in 0..<samples {
            let amounts = (0..<150).map { _ in generator.unit() < 0.3 ? Int64(4_990_000) : 0 }
            let interval = try #require(MeanInterval(amounts: amounts, seed: UInt64(sample)))
            #expect(interval.method == .bootstrap && interval.lowerMicros <= interval.upperMicros)
            if interval.lowerMicros <= truth && truth <= interval.upperMicros { covered += 1 }
        }
        // 95 % of 200 is 190; ±3 standard deviations (3.1 each) around it.
        #expect((181...199).contains(covered), "\(covered) of \(samples)")

        let amounts: [Int64] = [0, 0, 9_990_000, 0, 4_990_000]
        #expect(MeanInterval(amounts: amounts, seed: 1) == MeanInterval(amounts: amounts, seed: 1))
        let one = try #require(MeanInterval(amounts: [2_000_000], seed: 1))
        #expect(one.lowerMicros == 2_000_000 && one.upperMicros == 2_000_000)
        #expect(MeanInterval(amounts: [], seed: 1) == nil)
        // Many customers: mean 0.5 of 1.0 each, half paying: ±1.96 × 0.5 / √10,000 = ±9,800.
        let many = (0..<10_000).map { Int64($0 % 2 == 0 ? 1_000_000 : 0) }
        let normal = try #require(MeanInterval(amounts: many, seed: 1))
        #expect(normal.method == .normal && abs(normal.lowerMicros - 490_200) <= 1 && abs(normal.upperMicros - 509_800) <= 1, "\(normal)")
    }

    @Test("the leader: named only at 95 % probability best; arms' revenue intervals come with the results")
    func leader() {
        // 200 customers each; arm 1 pays twice as often as arm 0 (1 in 5 against 1 in 10), or
        // as often (`equal`).
        func population(equal: Bool) -> (enrollments: [ExperimentEnrollment], ledger: [LedgerEntry]) {
            var (enrollments, ledger) = ([ExperimentEnrollment](), [LedgerEntry]())
            for index in 0..<200 {
                for arm in 0..<2 {
                    let user = "c\(arm)-\(index)"
                    enrollments.append(enrolled(user, arm: arm))
                    if index % (arm == 1 && !equal ? 5 : 10) == 0 { ledger.append(entry(user, 1, price: 4_990_000, original: "s-\(user)")) }
                }
            }
            return (enrollments, ledger)
        }
        let planted = population(equal: false)
        let clear = ExperimentResults.compute(
            experiment: experiment, enrollments: planted.enrollments, ledger: planted.ledger, now: t0.addingTimeInterval(8 * day))
        #expect(clear.leader == 1, "\(clear.arms.map(\.probabilityBest))")
        let week = clear.arms[1].revenue.first { $0.days == 7 }
        #expect(week?.grossPerCustomerMicros == 998_000)
        #expect(week?.grossPerCustomerInterval.map { $0.lowerMicros < 998_000 && 998_000 < $0.upperMicros } == true, "\(String(describing: week))")
        let same = population(equal: true)
        let even = ExperimentResults.compute(experiment: experiment, enrollments: same.enrollments, ledger: same.ledger, now: t0)
        #expect(even.leader == nil, "\(even.arms.map(\.probabilityBest))")
    }
}
