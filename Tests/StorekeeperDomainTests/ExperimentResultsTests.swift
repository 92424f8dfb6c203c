import Foundation
import StorekeeperDomain
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
