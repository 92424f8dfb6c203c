public import Foundation
public import StorekeeperDomain

/// Credits spent from the balance consumable purchases build (docs/CREDITS.md).
public protocol CreditStore: Sendable {
    /// In one transaction, serialized with every other spend of the same user: a spend stored
    /// under (app, user, `spendId`) before is returned as it is, with nothing written (a retry,
    /// or another request of the user reusing the key: the caller tells which; a key is the
    /// user's own, so no other user can take it or learn of it); otherwise the user's balance
    /// (credits of their transactions not refunded, less what they spent) is read and `decide`
    /// returns the spend and its events to store, or nil to store nothing.
    func spendCredits(
        appId: String, appUserId: String, spendId: String, now: Date,
        decide: @escaping @Sendable (_ balance: Int) -> (CreditSpend, EventBatch)?
    ) async throws -> CreditSpendResult
    /// A user's spends, newest first, those before `before` (a `RecordedCreditSpend.cursor`) when set.
    func creditSpends(appId: String, appUserId: String, before: Int64?, limit: Int) async throws -> [RecordedCreditSpend]
    /// What the user spent in all.
    func creditsSpent(appId: String, appUserId: String) async throws -> Int
}

public enum CreditSpendResult: Sendable, Hashable {
    /// Stored by this call.
    case spent(CreditSpend)
    /// Stored before under the same key; this call wrote nothing.
    case existing(CreditSpend)
    /// `decide` refused at this balance; nothing written.
    case refused(balance: Int)
}

/// A spend with its place in the store's order (for paging a history).
public struct RecordedCreditSpend: Sendable, Hashable {
    public var cursor: Int64
    public var spend: CreditSpend

    public init(cursor: Int64, spend: CreditSpend) {
        self.cursor = cursor
        self.spend = spend
    }
}
