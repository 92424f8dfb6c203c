public import Foundation
public import StorekeeperDomain

/// What keeps an app's kept figures (`MetricContribution`, `RevenueDay`) in step with its
/// grants, the same for every adapter: which subscriptions and purchases a grant touched, and
/// the rows to delete, insert and add to the day totals so the stored contributions become the
/// recomputed ones. Pure; the adapters run it in the grant's transaction.
public enum MetricUpkeep {
    /// A contribution as stored, with its row id.
    public struct Stored: Sendable, Hashable {
        public var id: Int64
        public var contribution: MetricContribution

        public init(id: Int64, contribution: MetricContribution) {
            self.id = id
            self.contribution = contribution
        }
    }

    /// One day total of one kind and key.
    public struct DayKey: Sendable, Hashable, Comparable {
        public var kind: MetricContribution.Kind
        public var key: String
        public var day: Date

        public static func < (a: DayKey, b: DayKey) -> Bool { (a.kind, a.key, a.day) < (b.kind, b.key, b.day) }
    }

    public struct Change: Sendable {
        public var deletions: [Int64] = []
        public var insertions: [MetricContribution] = []
        /// Net amounts to add, in key order (so concurrent writers lock totals in one order); no zeros.
        public var days: [(key: DayKey, amount: Int64)] = []
        public var isEmpty: Bool { deletions.isEmpty && insertions.isEmpty }
    }

    /// What a grant touched: the original transactions of its subscriptions, and its consumable
    /// purchases, whose contributions are recomputed in its transaction.
    public static func touched(by plan: GrantPlan) -> (originals: [String], consumables: [String]) {
        var originals: Set<String> = Set(plan.subscriptions.map(\.originalTransactionId))
        var consumables: Set<String> = []
        for record in plan.newTransactions + plan.revokedTransactions + plan.reinstatedTransactions {
            switch record.productType {
            case .autoRenewable: originals.insert(record.originalTransactionId)
            case .consumable: consumables.insert(record.transactionId)
            default: continue
            }
        }
        return (originals.sorted(), consumables.sorted())
    }

    /// The writes that turn `old` into `new` (as multisets: a contribution kept is not rewritten).
    public static func change(from old: [Stored], to computed: [MetricContribution]) -> Change {
        let new = computed.map(stored)
        var wanted: [MetricContribution: Int] = [:]
        for contribution in new { wanted[contribution, default: 0] += 1 }
        var change = Change()
        var days: [DayKey: Int64] = [:]
        for stored in old {
            if let left = wanted[stored.contribution], left > 0 {
                wanted[stored.contribution] = left - 1
                continue
            }
            change.deletions.append(stored.id)
            days[key(stored.contribution), default: 0] -= stored.contribution.amount
        }
        for contribution in new where (wanted[contribution] ?? 0) > 0 {
            wanted[contribution]! -= 1
            change.insertions.append(contribution)
            days[key(contribution), default: 0] += contribution.amount
        }
        change.days = days.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { (key: $0.key, amount: $0.value) }
        return change
    }

    /// Every contribution of an app's transactions of one environment and its subscriptions, for
    /// a store building its kept figures from scratch: `records` grouped by original transaction.
    public static func contributions(
        originalTransaction records: [TransactionRecord], facts: SubscriptionFacts?, catalog: [String: Product]
    ) -> [(source: String, contribution: MetricContribution)] {
        guard let original = records.first?.originalTransactionId else { return [] }
        var result = MetricContribution.subscription(records, facts: facts, catalog: catalog).map { (source: original, contribution: $0) }
        for record in records where record.productType == .consumable {
            result += MetricContribution.consumable(record).map {
                (source: MetricContribution.source(consumable: record.transactionId), contribution: $0)
            }
        }
        return result
    }

    /// As a store gives it back (instants in whole milliseconds), so a kept one compares equal.
    public static func stored(_ contribution: MetricContribution) -> MetricContribution {
        var result = contribution
        result.at = StoredTime.date(StoredTime.ms(contribution.at))
        result.since = StoredTime.date(StoredTime.ms(contribution.since))
        result.until = StoredTime.date(StoredTime.ms(contribution.until))
        return result
    }

    public static func key(_ contribution: MetricContribution) -> DayKey {
        DayKey(kind: contribution.kind, key: contribution.key, day: contribution.day)
    }
}
