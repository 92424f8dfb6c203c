public import Foundation

/// What each arm of an experiment did, from the ledger alone (docs/EXPERIMENTS.md, "Results"):
/// only a customer's entries from their enrollment on count, so what a customer bought before
/// seeing an arm is never credited to it. Counts and money are exact integers (micro-units of
/// each currency, never converted here); only the intervals are `Double`.
public struct ExperimentResults: Codable, Hashable, Sendable {
    /// A proportion with its 95 % Wilson interval; no interval without trials.
    public struct Proportion: Codable, Hashable, Sendable {
        public var successes: Int
        public var trials: Int
        public var estimate: Double?
        public var lower: Double?
        public var upper: Double?

        public init(successes: Int, trials: Int) {
            self.successes = successes
            self.trials = trials
            let interval = ProportionInterval(successes: successes, trials: trials)
            (estimate, lower, upper) = (interval?.estimate, interval?.lower, interval?.upper)
        }
    }

    /// Realized revenue per customer `days` after enrollment, in one currency, over the
    /// customers enrolled at least that long ago (the others cannot have reached it yet).
    public struct Revenue: Codable, Hashable, Sendable {
        public var days: Int
        public var currency: String
        /// Customers of the arm whose `days` have passed (the denominator).
        public var customers: Int
        /// Charged, refunds subtracted, in micro-units.
        public var grossMicros: Int64
        /// After Apple's commission, where the ledger knows it.
        public var proceedsMicros: Int64
        /// `grossMicros` ÷ `customers`, rounded toward zero.
        public var grossPerCustomerMicros: Int64
        public var proceedsPerCustomerMicros: Int64
        /// 95 % intervals of the two per-customer figures (`MeanInterval`).
        public var grossPerCustomerInterval: MeanInterval?
        public var proceedsPerCustomerInterval: MeanInterval?
    }

    public struct Arm: Codable, Hashable, Sendable {
        public var arm: Int
        public var offering: String
        public var enrolled: Int
        /// Customers who bought anything with a price after enrollment.
        public var payingCustomers: Int
        /// Customers who started a free trial after enrollment.
        public var trialsStarted: Int
        /// Customers with a refund after enrollment.
        public var refundedCustomers: Int
        /// Paying customers among the enrolled.
        public var initialConversion: Proportion
        /// The probability that this arm's initial conversion is the highest (`ProbabilityBest`).
        public var probabilityBest: Double
        /// Trial starters who paid for the same subscription after their trial.
        public var trialConversion: Proportion
        /// Refunded customers among the paying.
        public var refundRate: Proportion
        public var revenue: [Revenue]
        /// The same figures with every amount converted to the app's reporting currency at its
        /// purchase month's rate (`ReportingCurrency`); absent when the app has none. An entry
        /// whose rate is missing is left out here (and named in `missingRates`).
        public var reportingRevenue: [Revenue]?
    }

    public var experimentId: String
    public var asOf: Date
    public var arms: [Arm]
    /// The arm whose initial conversion is the highest with probability at least
    /// `leaderProbability`, if one is: what the results report as better. Nil while no arm is
    /// that clearly ahead (an A/A experiment should stay so).
    public var leader: Int?
    /// `YYYY-MM CUR` of the rates missing to convert counted entries to the reporting currency.
    public var missingRates: [String]?

    /// How sure the results must be before naming a leader.
    public static let leaderProbability = 0.95

    /// Days after enrollment at which revenue per customer is told.
    public static let horizons = [7, 14, 30, 60, 90]

    /// `enrollments` name each customer by the id their purchases are recorded under (an
    /// enrolled anonymous id already replaced by the known user it was linked to); a customer
    /// enrolled under two ids counts once, from the earlier. `ledger`: the customers' entries.
    public static func compute(
        experiment: Experiment, enrollments: [ExperimentEnrollment], ledger: [LedgerEntry], now: Date, reporting: ReportingCurrency? = nil
    ) -> ExperimentResults {
        var earliest: [String: ExperimentEnrollment] = [:]
        for enrollment in enrollments where enrollment.arm >= 0 && enrollment.arm < experiment.arms.count {
            if let kept = earliest[enrollment.appUserId], kept.enrolledAt <= enrollment.enrolledAt { continue }
            earliest[enrollment.appUserId] = enrollment
        }
        var entries: [String: [LedgerEntry]] = [:]
        for entry in ledger {
            guard let enrollment = earliest[entry.appUserId], entry.purchaseDate >= enrollment.enrolledAt else { continue }
            entries[entry.appUserId, default: []].append(entry)
        }
        var arms = experiment.arms.indices.map { index in
            let customers = earliest.values.filter { $0.arm == index }.sorted { $0.appUserId < $1.appUserId }
            let seed = Experiment.bucket(experimentId: experiment.id, customerId: "revenue-\(index)")
            var arm = arm(index, offering: experiment.arms[index].offering, customers: customers, entries: entries, now: now, seed: seed)
            if let reporting {
                arm.reportingRevenue = revenue(
                    customers: customers, entries: entries, now: now, seed: StableHash.mix(seed ^ StableHash.fnv1a(["reporting"]))
                ) { entry in
                    LedgerAmount(entry)?.converted(reporting, purchasedAt: RevenueReport.month(of: entry.purchaseDate))
                }
            }
            return arm
        }
        let missing = Set(
            entries.values.joined().compactMap { entry -> String? in
                guard let reporting, let native = LedgerAmount(entry) else { return nil }
                let month = RevenueReport.month(of: entry.purchaseDate)
                return native.converted(reporting, purchasedAt: month) == nil ? "\(month) \(native.currency)" : nil
            })
        let best = ProbabilityBest.conversion(
            successes: arms.map(\.payingCustomers), trials: arms.map(\.enrolled), seed: ProbabilityBest.seed(experimentId: experiment.id))
        for index in arms.indices { arms[index].probabilityBest = best[index] }
        let leader = arms.firstIndex { $0.probabilityBest >= leaderProbability }
        return ExperimentResults(
            experimentId: experiment.id, asOf: now, arms: arms, leader: leader, missingRates: missing.isEmpty ? nil : missing.sorted())
    }

    static func arm(
        _ index: Int, offering: String, customers: [ExperimentEnrollment], entries: [String: [LedgerEntry]], now: Date, seed: UInt64
    ) -> Arm {
        var (paying, trials, converted, refunded) = (0, 0, 0, 0)
        for customer in customers {
            let bought = entries[customer.appUserId] ?? []
            let paid = bought.filter { $0.event == .purchase && ($0.priceMicros ?? 0) > 0 }
            if !paid.isEmpty { paying += 1 }
            if bought.contains(where: { $0.event == .refund }) { refunded += 1 }
            let trialStarts = bought.filter { $0.event == .purchase && $0.offer?.discountType == PurchaseOffer.freeTrial }
            guard !trialStarts.isEmpty else { continue }
            trials += 1
            if trialStarts.contains(where: { trial in
                paid.contains { $0.originalTransactionId == trial.originalTransactionId && $0.purchaseDate > trial.purchaseDate }
            }) {
                converted += 1
            }
        }
        return Arm(
            arm: index, offering: offering, enrolled: customers.count, payingCustomers: paying, trialsStarted: trials,
            refundedCustomers: refunded, initialConversion: Proportion(successes: paying, trials: customers.count), probabilityBest: 0,
            trialConversion: Proportion(successes: converted, trials: trials), refundRate: Proportion(successes: refunded, trials: paying),
            revenue: revenue(customers: customers, entries: entries, now: now, seed: seed, amount: LedgerAmount.init))
    }

    /// Per horizon and currency (`amount` gives each entry's, its own or converted); a currency
    /// appears once any eligible customer paid in it. The intervals' resamples are seeded from
    /// `seed` (the experiment and arm), the horizon and the currency, so every figure is
    /// reproducible from the ledger alone.
    static func revenue(
        customers: [ExperimentEnrollment], entries: [String: [LedgerEntry]], now: Date, seed: UInt64, amount: (LedgerEntry) -> LedgerAmount?
    ) -> [Revenue] {
        horizons.flatMap { days -> [Revenue] in
            let span = TimeInterval(days) * 86_400
            let eligible = customers.filter { $0.enrolledAt.addingTimeInterval(span) <= now }
            // Each eligible customer's charged and earned amounts per currency, in their order.
            var gross: [String: [Int64]] = [:]
            var proceeds: [String: [Int64]] = [:]
            for (position, customer) in eligible.enumerated() {
                let end = customer.enrolledAt.addingTimeInterval(span)
                for entry in entries[customer.appUserId] ?? [] where entry.purchaseDate < end {
                    guard let money = amount(entry) else { continue }
                    gross[money.currency, default: Array(repeating: 0, count: eligible.count)][position] += money.gross
                    proceeds[money.currency, default: Array(repeating: 0, count: eligible.count)][position] += money.proceeds
                }
            }
            let count = Int64(eligible.count)
            return gross.keys.sorted().map { currency in
                let (g, p) = (gross[currency] ?? [], proceeds[currency] ?? [])
                let (totalGross, totalProceeds) = (g.reduce(0, +), p.reduce(0, +))
                let drawn = StableHash.mix(seed ^ StableHash.fnv1a(["\(days)", currency]))
                return Revenue(
                    days: days, currency: currency, customers: eligible.count, grossMicros: totalGross, proceedsMicros: totalProceeds,
                    grossPerCustomerMicros: count > 0 ? totalGross / count : 0, proceedsPerCustomerMicros: count > 0 ? totalProceeds / count : 0,
                    grossPerCustomerInterval: MeanInterval(amounts: g, seed: drawn),
                    proceedsPerCustomerInterval: MeanInterval(amounts: p, seed: drawn &+ 1))
            }
        }
    }
}
