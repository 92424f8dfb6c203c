import Foundation
public import Persistence
import StorekeeperDomain

/// Support's search (docs/CONSOLE.md): the customers a piece of text names exactly, whichever of
/// their ids it is. Each lookup goes through an index; nothing is matched by prefix or pattern,
/// so a search never scans the customers.
public struct FindCustomers: Sendable {
    public typealias Store = CustomerStore & IdentityStore & LedgerStore & PromotionalGrantStore & VerificationStore

    /// Which of a customer's ids the text was: theirs, an alias, their Apple account's, or a
    /// field the store matched (a transaction's ids, an `appAccountToken`, an e-mail).
    public enum Via: Sendable, Hashable {
        case appUserId, alias, appTransactionId
        case matched(CustomerMatch.Field)
    }

    public struct Found: Sendable, Hashable {
        public var appUserId: String
        public var via: Via

        public init(appUserId: String, via: Via) {
            self.appUserId = appUserId
            self.via = via
        }
    }

    /// At most this many customers (an e-mail or an Apple account shared by many users).
    public static let maximumResults = 50
    /// Longer text names nobody: ids and e-mails are shorter.
    public static let maximumLength = 512

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// Each customer once, by the first way found: an app user id or alias, an app transaction
    /// id, a transaction or original transaction id, an `appAccountToken`, an e-mail.
    public func search(appId: String, text raw: String) async throws -> [Found] {
        let text = raw.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty, text.utf8.count <= Self.maximumLength else { return [] }
        var found: [Found] = []
        func add(_ appUserId: String, _ via: Via) {
            guard found.count < Self.maximumResults, !found.contains(where: { $0.appUserId == appUserId }) else { return }
            found.append(Found(appUserId: appUserId, via: via))
        }
        let canonical = AnonymousId.isAnonymous(text) ? try await store.canonicalId(appId: appId, alias: text) : nil
        if let canonical {
            add(canonical, .alias)
        } else if try await isKnown(appId: appId, appUserId: text) {
            add(text, .appUserId)
        }
        for transaction in try await store.transactions(appId: appId, appTransactionId: text) {
            add(transaction.appUserId, .appTransactionId)
        }
        // The most specific field first: a first purchase's transaction id is its original's too.
        let matches = try await store.customerMatches(appId: appId, text: text, limit: Self.maximumResults)
        for match in matches.sorted(by: { Self.rank($0.field) < Self.rank($1.field) }) {
            add(match.appUserId, .matched(match.field))
        }
        return found
    }

    static func rank(_ field: CustomerMatch.Field) -> Int {
        CustomerMatch.Field.allCases.firstIndex(of: field) ?? .max
    }

    /// Anything stored under the id: a purchase, a verification, attributes, promotional access
    /// or an alias.
    func isKnown(appId: String, appUserId: String) async throws -> Bool {
        if !(try await store.transactions(appId: appId, appUserId: appUserId)).isEmpty { return true }
        if !(try await store.verifications(appId: appId, appUserId: appUserId, limit: 1)).isEmpty { return true }
        if try await store.attributes(appId: appId, appUserId: appUserId) != nil { return true }
        if !(try await store.promotionalGrants(appId: appId, appUserId: appUserId)).isEmpty { return true }
        return !(try await store.aliases(appId: appId, appUserId: appUserId)).isEmpty
    }
}
