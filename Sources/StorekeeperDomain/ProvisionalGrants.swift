public import Foundation

/// Access given while Apple cannot be asked, on the strength of a receipt whose signature and
/// chain were verified locally. Never money: no ledger entry, no credits; it ends at `expiresAt`
/// or as soon as Apple answers (then the real grant, or nothing, replaces it).
public struct ProvisionalGrant: Codable, Hashable, Sendable {
    public var appId: String
    public var appUserId: String
    public var verificationId: String
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    public var expiresAt: Date

    public init(
        appId: String, appUserId: String, verificationId: String, transactionId: String, originalTransactionId: String,
        productId: String, expiresAt: Date
    ) {
        self.appId = appId
        self.appUserId = appUserId
        self.verificationId = verificationId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.expiresAt = expiresAt
    }
}

/// The outage policy: off by default, because it trusts a receipt Apple has not confirmed.
public struct OutagePolicy: Codable, Hashable, Sendable {
    /// Grant provisionally at all.
    public var enabled: Bool = false
    /// How long Apple must have failed for this verification before access is given.
    public var afterSeconds: Double = 900
    /// Longest a provisional grant lasts without Apple's answer.
    public var provisionalSeconds: Double = 172_800

    public init(enabled: Bool = false, afterSeconds: Double = 900, provisionalSeconds: Double = 172_800) {
        self.enabled = enabled
        self.afterSeconds = afterSeconds
        self.provisionalSeconds = provisionalSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = OutagePolicy()
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
        afterSeconds = try c.decodeIfPresent(Double.self, forKey: .afterSeconds) ?? d.afterSeconds
        provisionalSeconds = try c.decodeIfPresent(Double.self, forKey: .provisionalSeconds) ?? d.provisionalSeconds
    }

    enum CodingKeys: String, CodingKey { case enabled, afterSeconds, provisionalSeconds }
}

/// Decides what a locally verified receipt may unlock during an outage. Pure.
public enum ProvisionalPlanner {
    /// A purchase as read from the receipt itself (not from Apple).
    public struct Purchase: Sendable, Hashable {
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDate: Date
        public var expiresDate: Date?
        public var cancellationDate: Date?

        public init(
            productId: String, transactionId: String, originalTransactionId: String, purchaseDate: Date, expiresDate: Date?,
            cancellationDate: Date?
        ) {
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.cancellationDate = cancellationDate
        }
    }

    /// Access products only: consumables are never provisional (spent credits cannot be taken
    /// back); cancelled or lapsed purchases give nothing; each grant ends at the earlier of the
    /// policy's limit and the purchase's own end.
    public static func plan(
        _ purchases: [Purchase], catalog: [String: Product], policy: OutagePolicy, appId: String, appUserId: String,
        verificationId: String, now: Date
    ) -> [ProvisionalGrant] {
        let limit = now.addingTimeInterval(policy.provisionalSeconds)
        var grants: [String: ProvisionalGrant] = [:]
        for purchase in purchases where purchase.cancellationDate == nil {
            guard let product = catalog[purchase.productId] else { continue }
            let end: Date?
            switch product.type {
            case .nonConsumable, .freeSubscription: end = limit
            case .autoRenewable: end = purchase.expiresDate.map { min($0, limit) }
            case .nonRenewing:
                end = product.duration.flatMap { ISODuration($0)?.added(to: purchase.purchaseDate) }.map { min($0, limit) }
            default: end = nil
            }
            guard let end, end > now else { continue }
            grants[purchase.transactionId] = ProvisionalGrant(
                appId: appId, appUserId: appUserId, verificationId: verificationId, transactionId: purchase.transactionId,
                originalTransactionId: purchase.originalTransactionId, productId: purchase.productId, expiresAt: end)
        }
        return grants.values.sorted { $0.transactionId < $1.transactionId }
    }
}
