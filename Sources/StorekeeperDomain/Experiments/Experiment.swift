public import Foundation

/// An experiment on offerings (issue #51, docs/EXPERIMENTS.md): customers enrolled while it runs
/// are split between two to four arms by weight, each arm an offering shown as current. The
/// split is a pure function of the experiment and the customer, so every device of a customer
/// (every id linked to the same known user) lands in the same arm without the server keeping a
/// table to agree on, and a customer cannot choose an arm by anything the app sends.
public struct Experiment: Codable, Hashable, Sendable {
    public struct Arm: Codable, Hashable, Sendable {
        public var offering: String
        /// A share of the customers relative to the other arms' (1-1000; 1 and 1 split as 50/50).
        public var weight: Int

        public init(offering: String, weight: Int) {
            self.offering = offering
            self.weight = weight
        }
    }

    public var id: String
    public var arms: [Arm]
    /// Customers are enrolled from this instant (inclusive)…
    public var startsAt: Date
    /// …until this one (exclusive); nil: until stopped.
    public var endsAt: Date?
    /// When an operator stopped it: nobody new is enrolled from then on, and enrolled
    /// customers are shown what the targeting shows everyone.
    public var stoppedAt: Date?
    /// The arm an operator shipped: its offering became the app's current one, and the
    /// experiment stopped (if it had not), in one change.
    public var shippedArm: Int?

    public static let armCount = 2...4
    public static let weightRange = 1...1000

    public init(id: String, arms: [Arm], startsAt: Date, endsAt: Date? = nil) {
        self.id = id
        self.arms = arms
        self.startsAt = startsAt
        self.endsAt = endsAt
    }

    /// Every problem of the experiment's own shape; the offerings it names are checked against
    /// the app's by the use case.
    public func problems() -> [String] {
        var problems: [String] = []
        if !OfferingIdentifier.isValid(id) { problems.append("id: \(OfferingIdentifier.rule)") }
        if !Self.armCount.contains(arms.count) { problems.append("arms: \(Self.armCount.lowerBound)-\(Self.armCount.upperBound)") }
        var offerings = Set<String>()
        for (index, arm) in arms.enumerated() {
            if !OfferingIdentifier.isValid(arm.offering) { problems.append("arms[\(index)].offering: \(OfferingIdentifier.rule)") }
            if !offerings.insert(arm.offering).inserted { problems.append("arms[\(index)].offering: '\(arm.offering)' is another arm's") }
            if !Self.weightRange.contains(arm.weight) {
                problems.append("arms[\(index)].weight: \(Self.weightRange.lowerBound)-\(Self.weightRange.upperBound)")
            }
        }
        if let endsAt, endsAt <= startsAt { problems.append("endsAt: after startsAt") }
        return problems
    }

    /// An instant as an experiment keeps it: whole milliseconds (Apple's unit, and what both
    /// databases store), taken downward, so a stop is never recorded after the moment it was
    /// asked and an answer given in that same moment already shows the stop.
    public static func instant(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// Whether a customer not enrolled yet is enrolled at `now`.
    public func enrolls(at now: Date) -> Bool {
        now >= startsAt && (endsAt.map { now < $0 } ?? true) && (stoppedAt.map { now < $0 } ?? true)
    }

    /// Whether an enrolled customer is still shown their arm at `now`: from the start until the
    /// experiment is stopped (its end only closes enrollment, so results at 90 days after a
    /// customer's enrollment compare arms the customers kept seeing).
    public func shows(at now: Date) -> Bool {
        now >= startsAt && (stoppedAt.map { now < $0 } ?? true)
    }

    /// The customer's enrollment at `now`, with the arm the documented hash gives.
    public func enrollment(of appUserId: String, at now: Date) -> ExperimentEnrollment {
        let arm = arm(for: appUserId)
        return ExperimentEnrollment(experimentId: id, appUserId: appUserId, arm: arm, offering: arms[arm].offering, enrolledAt: now)
    }

    /// The arm (an index into `arms`) a customer belongs to: the customer's bucket among the
    /// arms' total weight. Stable for a customer id and an experiment id, independent of the
    /// order customers arrive in; an experiment of another id splits the same customers anew.
    public func arm(for customerId: String) -> Int {
        let total = arms.reduce(0) { $0 + max($1.weight, 0) }
        guard total > 0 else { return 0 }
        var bucket = Int(Self.bucket(experimentId: id, customerId: customerId) % UInt64(total))
        for (index, arm) in arms.enumerated() {
            bucket -= max(arm.weight, 0)
            if bucket < 0 { return index }
        }
        return arms.count - 1
    }

    /// A 64-bit value spread evenly over customers: FNV-1a over the UTF-8 of the experiment id,
    /// a zero byte and the customer id, then SplitMix64's finalizer, whose avalanche makes
    /// similar ids (`user-1`, `user-2`) land apart. Written down in docs/EXPERIMENTS.md so a
    /// backend can reproduce an assignment.
    public static func bucket(experimentId: String, customerId: String) -> UInt64 {
        StableHash.mix(StableHash.fnv1a([experimentId, customerId]))
    }
}
