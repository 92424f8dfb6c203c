import Foundation

/// Spends a user's credits (`POST /v1/subscribers/{appUserId}/credits/spend`, keyed by the
/// `Idempotency-Key` header: the same key answers the same spend again).
public struct CreditSpendRequest: WireMessage {
    public static let location = WireLocation.request(method: "post", path: "/v1/subscribers/{appUserId}/credits/spend")
    public var amount: Int?
    public var reason: String?

    public init(amount: Int?, reason: String?) {
        self.amount = amount
        self.reason = reason
    }
}

/// One spend of a user's credits.
public struct CreditSpendEntry: WireMessage {
    public static let location = WireLocation.schema("CreditSpend")
    /// The spend's `Idempotency-Key`.
    public var id: String
    public var appUserId: String
    public var amount: Int
    public var reason: String
    public var spentAt: Date
    public var balanceAfter: Int

    public init(id: String, appUserId: String, amount: Int, reason: String, spentAt: Date, balanceAfter: Int) {
        self.id = id
        self.appUserId = appUserId
        self.amount = amount
        self.reason = reason
        self.spentAt = spentAt
        self.balanceAfter = balanceAfter
    }
}

/// A spend's answer.
public struct CreditSpendAnswer: WireMessage {
    public static let location = WireLocation.schema("CreditSpendAnswer")
    public var spend: CreditSpendEntry
    /// The balance right after this spend (a replay answers the stored spend as it was).
    public var balance: Int
    /// True when the same request was answered before under this key: nothing spent now.
    public var replayed: Bool

    public init(spend: CreditSpendEntry, balance: Int, replayed: Bool) {
        self.spend = spend
        self.balance = balance
        self.replayed = replayed
    }
}

/// A user's credits: the balance, its parts and a page of spends (`GET …/credits`).
public struct CreditHistory: WireMessage {
    public static let location = WireLocation.schema("CreditHistory")
    public var appUserId: String
    public var balance: Int
    /// Credits of the user's consumables not refunded.
    public var purchased: Int
    public var spent: Int
    /// Newest first.
    public var spends: [CreditSpendEntry]
    /// Pass as `before` for the next page; absent on the last.
    public var nextBefore: Int64?

    public init(appUserId: String, balance: Int, purchased: Int, spent: Int, spends: [CreditSpendEntry], nextBefore: Int64?) {
        self.appUserId = appUserId
        self.balance = balance
        self.purchased = purchased
        self.spent = spent
        self.spends = spends
        self.nextBefore = nextBefore
    }
}
