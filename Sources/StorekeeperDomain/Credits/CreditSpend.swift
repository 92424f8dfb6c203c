public import Foundation

/// Credits a user spent: what the app's backend (or the user, where the app allows it) took
/// from the balance their consumable purchases built, under the caller's idempotency key, so a
/// retried request spends once. Stored with the balance it left, in the transaction that
/// checked the balance (docs/CREDITS.md).
public struct CreditSpend: Codable, Hashable, Sendable {
    /// The caller's `Idempotency-Key`: unique within the app.
    public var id: String
    public var appId: String
    public var appUserId: String
    /// Whole credits, more than zero.
    public var amount: Int
    public var reason: String
    public var spentAt: Date
    /// The balance right after this spend.
    public var balanceAfter: Int

    public init(id: String, appId: String, appUserId: String, amount: Int, reason: String, spentAt: Date, balanceAfter: Int) {
        self.id = id
        self.appId = appId
        self.appUserId = appUserId
        self.amount = amount
        self.reason = reason
        self.spentAt = spentAt
        self.balanceAfter = balanceAfter
    }

    /// The most one request may spend: far above any balance a store sells, far below overflow.
    public static let maximumAmount = 1_000_000_000

    /// What is wrong with a request, one line per field (empty: nothing).
    public static func problems(key: String?, amount: Int?, reason: String?) -> [String] {
        var problems: [String] = []
        if let key {
            let printable = key.unicodeScalars.allSatisfy { $0.value >= 0x21 && $0.value <= 0x7E }
            if key.isEmpty || key.utf8.count > 255 || !printable {
                problems.append("Idempotency-Key: 1-255 printable ASCII characters without spaces")
            }
        } else {
            problems.append("Idempotency-Key: the header is required, so a retried spend is not spent twice")
        }
        if let amount {
            if amount < 1 || amount > maximumAmount { problems.append("amount: a whole number of credits from 1 to \(maximumAmount)") }
        } else {
            problems.append("amount: required")
        }
        if let reason {
            if PromotionalGrant.isBlank(reason) || reason.unicodeScalars.count > 200 { problems.append("reason: 1-200 characters, not all spaces") }
        } else {
            problems.append("reason: required")
        }
        return problems
    }

    /// Whether the same request was sent again under this key (anything else reusing the key is
    /// refused, never spent).
    public func isSameRequest(appUserId: String, amount: Int, reason: String) -> Bool {
        self.appUserId.isSameIdentifier(as: appUserId) && self.amount == amount && self.reason == reason
    }

    /// `credits_spent`, its id derived from the user and the key (a key is the user's own), so
    /// recording it again adds nothing.
    public func event(now: Date) -> SubscriberEvent {
        var details = SubscriberEvent.Details(reason: reason, credits: amount)
        details.creditBalance = balanceAfter
        details.spendId = id
        return SubscriberEvent(
            id: SubscriberEvent.id(type: .creditsSpent, subject: "credits_" + SubscriberEvent.fingerprint(appUserId), cause: id), type: .creditsSpent,
            appId: appId,
            environment: nil, appUserId: appUserId, occurredAt: spentAt, recordedAt: now, details: details)
    }
}

/// Whether a spend may be made: never below zero. A balance that a refund of spent credits made
/// negative stays so (docs/CREDITS.md) and refuses every spend until purchases lift it.
public enum CreditSpendRule {
    public enum Decision: Sendable, Hashable {
        case spend(balanceAfter: Int)
        case insufficient(balance: Int)
    }

    public static func decide(balance: Int, amount: Int) -> Decision {
        guard amount > 0, balance >= amount else { return .insufficient(balance: balance) }
        return .spend(balanceAfter: balance - amount)
    }
}
