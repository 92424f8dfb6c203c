public import Foundation

/// An app's auto-renewable subscriptions as periods of access, built from the transactions the
/// server granted (docs/ANALYTICS.md): the input every subscription figure reads. One timeline
/// per subscription (original transaction id); a Family Sharing member's copy is nobody's payment
/// and is left out. Pure.
public struct SubscriptionTimeline: Sendable, Hashable {
    /// One transaction's period: from its purchase to its expiry, or to its revocation when Apple
    /// revoked it earlier (a refund, an upgrade).
    public struct Period: Sendable, Hashable {
        public var transactionId: String
        public var productId: String
        public var start: Date
        public var end: Date
        /// A free trial (introductory offer, `FREE_TRIAL`): access without payment.
        public var isTrial: Bool
        /// What one period costs, normalized to a month; nil when the billing period is unknown.
        public var monthlyMicros: Int64?
        public var currency: String?
    }

    public var originalTransactionId: String
    public var appUserId: String
    /// Oldest first.
    public var periods: [Period]
    /// Apple's billing grace period at the last word (the access lasts past the last period's end).
    public var graceEnd: Date?
    public var inBillingRetry = false

    /// The period giving access at `instant`, if any (the grace period extends the last one).
    public func period(at instant: Date) -> Period? {
        if let covering = periods.last(where: { $0.start <= instant && instant < $0.end }) { return covering }
        if let last = periods.last, let graceEnd, last.end <= instant, instant < graceEnd { return last }
        return nil
    }

    /// A paid (not trial) period gives access at `instant`.
    public func isPaying(at instant: Date) -> Bool { period(at: instant).map { !$0.isTrial } ?? false }

    /// Builds every own subscription's timeline from an app's transactions (any order) and its
    /// subscription facts. `unknownPeriods` names the products whose billing period is neither in
    /// the catalog (`duration`) nor readable from the transaction's dates: left out of MRR.
    public static func build(
        _ transactions: [TransactionRecord], facts: [SubscriptionFacts], catalog: [String: Product]
    ) -> (timelines: [SubscriptionTimeline], unknownPeriods: [String]) {
        var byOriginal: [String: [TransactionRecord]] = [:]
        for record in transactions
        where record.productType == .autoRenewable && record.ownershipType != LedgerRule.familyShared {
            byOriginal[record.originalTransactionId, default: []].append(record)
        }
        let factsByOriginal = Dictionary(facts.map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { a, _ in a })
        var unknown: Set<String> = []
        var timelines: [SubscriptionTimeline] = []
        for (original, records) in byOriginal {
            let sorted = records.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
            var periods: [Period] = []
            for record in sorted {
                guard let expires = record.expiresDate else { continue }
                let end = min(expires, record.cancellationDate ?? expires)
                guard record.purchaseDate < end else { continue }
                let isTrial =
                    record.offer?.type == PurchaseOffer.introductory && record.offer?.discountType == PurchaseOffer.freeTrial
                let charged = record.price.flatMap { price in price.micros.map { ($0, price.currency) } }
                let listed = catalog[record.productId].flatMap { product in product.priceMicros.map { ($0, product.currency) } }
                let (micros, currency) = isTrial ? (Int64(0), charged?.1 ?? listed?.1) : (charged ?? listed).map { ($0.0, $0.1) } ?? (nil, nil)
                let perMonth = MonthlyNormalization(record: record, catalog: catalog)
                if perMonth == nil, !isTrial { unknown.insert(record.productId) }
                periods.append(
                    Period(
                        transactionId: record.transactionId, productId: record.productId, start: record.purchaseDate, end: end,
                        isTrial: isTrial, monthlyMicros: isTrial ? 0 : micros.flatMap { perMonth?.monthly($0) },
                        currency: currency))
            }
            guard !periods.isEmpty else { continue }
            var timeline = SubscriptionTimeline(originalTransactionId: original, appUserId: sorted[0].appUserId, periods: periods)
            if let facts = factsByOriginal[original], facts.revokedAt == nil {
                // Grace extends the access Apple granted last, only while the facts speak of that period.
                if let grace = facts.gracePeriodExpiresDate, let expires = facts.expiresDate, expires == periods.last?.end, grace > expires {
                    timeline.graceEnd = grace
                }
                timeline.inBillingRetry = facts.inBillingRetry
            }
            timelines.append(timeline)
        }
        return (timelines.sorted { $0.originalTransactionId < $1.originalTransactionId }, unknown.sorted())
    }
}

/// A billing period turned into "per month" (DOMAIN §7: annual ÷ 12, weekly × 52 ÷ 12): a price
/// is multiplied by `numerator` and divided by `denominator`, rounded half away from zero.
struct MonthlyNormalization: Hashable {
    var numerator: Int64
    var denominator: Int64

    /// From the catalog's `duration` for the product; a plan billed monthly (`MONTHLY`, with a
    /// commitment) is a month whatever its term; otherwise read from the transaction's own dates
    /// where they are a week, a month, two, three or six months or a year (never in the sandbox,
    /// whose periods are accelerated).
    init?(record: TransactionRecord, catalog: [String: Product]) {
        if record.billingPlanType == "MONTHLY" {
            self.init(months: 1, days: 0)
        } else if let text = catalog[record.productId]?.duration, let duration = ISODuration(text) {
            let c = duration.components
            guard (c.hour ?? 0) == 0, (c.minute ?? 0) == 0, (c.second ?? 0) == 0 else { return nil }
            self.init(months: (c.year ?? 0) * 12 + (c.month ?? 0), days: c.day ?? 0)
        } else if record.environment == "production", let expires = record.expiresDate {
            let days = expires.timeIntervalSince(record.purchaseDate) / 86_400
            let known: [(ClosedRange<Double>, Int, Int)] = [
                (6.5...7.5, 0, 7), (27.5...31.5, 1, 0), (58.5...62.5, 2, 0), (88.5...92.5, 3, 0), (180.5...184.5, 6, 0),
                (364.5...366.5, 12, 0),
            ]
            guard let match = known.first(where: { $0.0.contains(days) }) else { return nil }
            self.init(months: match.1, days: match.2)
        } else {
            return nil
        }
    }

    init?(months: Int, days: Int) {
        switch (months, days) {
        case let (m, 0) where m > 0: (numerator, denominator) = (1, Int64(m))
        case let (0, d) where d > 0 && d % 7 == 0: (numerator, denominator) = (52, 12 * Int64(d / 7))
        case let (0, d) where d > 0: (numerator, denominator) = (365, 12 * Int64(d))
        default: return nil
        }
    }

    func monthly(_ micros: Int64) -> Int64? {
        let (product, overflow) = micros.multipliedReportingOverflow(by: numerator)
        guard !overflow else { return nil }
        let quotient = product / denominator
        let remainder = product % denominator
        return quotient + (remainder.magnitude * 2 >= denominator.magnitude ? (product < 0 ? -1 : 1) : 0)
    }
}
