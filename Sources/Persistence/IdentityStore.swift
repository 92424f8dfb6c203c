public import Foundation
public import StorekeeperDomain

/// Aliases: anonymous ids linked to the known user they became (docs/IDENTITY.md).
public protocol IdentityStore: Sendable {
    /// The known user `alias` was linked to; nil when it is no alias.
    func canonicalId(appId: String, alias: String) async throws -> String?
    /// The aliases of a known user, oldest first.
    func aliases(appId: String, appUserId: String) async throws -> [String]
    /// Links `alias` to `appUserId` in one transaction. With `transfer`, every purchase bound to
    /// the alias moves to the user (transactions, subscriptions, ledger rows, ownership,
    /// provisional and promotional grants; its attributes, offering override and access
    /// suspension where the user has none), and the events `events` makes of the moved
    /// transactions are recorded. Without it, an alias that owns a purchase is not linked.
    func link(
        appId: String, alias: String, to appUserId: String, transfer: Bool, now: Date,
        events: @escaping @Sendable ([TransactionRecord]) -> EventBatch
    ) async throws -> IdentityLink
}
