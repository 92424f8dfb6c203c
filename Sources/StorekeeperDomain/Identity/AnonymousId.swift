public import Foundation

/// The ids StorekeeperKit makes for a user nobody has signed in yet: `$anon:` and a lower-case
/// UUID. Reserved: an app's own user ids never take this form, so a known user can never be
/// merged into another account as if it were anonymous (docs/IDENTITY.md).
public enum AnonymousId {
    public static let prefix = "$anon:"

    public static func isAnonymous(_ appUserId: String) -> Bool {
        guard appUserId.hasPrefix(prefix) else { return false }
        let uuid = appUserId.dropFirst(prefix.count)
        return uuid.count == 36 && UUID(uuidString: String(uuid)) != nil && uuid == uuid.lowercased()
    }

    /// Starts with the reserved prefix without being a well-formed anonymous id.
    public static func isMalformed(_ appUserId: String) -> Bool { appUserId.hasPrefix(prefix) && !isAnonymous(appUserId) }

    public static func new() -> String { prefix + UUID().uuidString.lowercased() }
}

/// What `logIn` does with the purchases an anonymous id owns (`apps[].logInPolicy`).
public enum LogInPolicy: String, Codable, Hashable, Sendable, CaseIterable {
    /// They move to the signed-in user, and the anonymous id becomes their alias.
    case transfer
    /// They stay with the anonymous id, their first owner: an anonymous id that owns a purchase
    /// is not linked; one that owns none is.
    case keep
}

/// How linking an anonymous id to a known user ended.
public enum IdentityLink: Sendable, Hashable {
    /// Linked now; the transactions moved to the known user (empty under `keep`).
    case linked(moved: [TransactionRecord])
    case alreadyLinked
    /// The anonymous id is another user's alias.
    case linkedElsewhere
    /// `keep`: the anonymous id owns purchases, which stay with it; not linked.
    case keptWithAnonymous(owned: [TransactionRecord])
}

extension IdentityLink {
    /// The `transfer` events of a link that moved purchases: one per original transaction, to
    /// the known user, from the anonymous id (`details.fromAppUserId`). `cause` makes the ids
    /// (one per link), so recording them again adds nothing.
    public static func transferEvents(
        moved: [TransactionRecord], from alias: String, to appUserId: String, appId: String, cause: String, now: Date
    ) -> [SubscriberEvent] {
        var seen = Set<String>()
        return moved.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }.compactMap { record in
            guard seen.insert(record.originalTransactionId).inserted else { return nil }
            var details = SubscriberEvent.Details()
            details.fromAppUserId = alias
            details.toAppUserId = appUserId
            return SubscriberEvent(
                id: SubscriberEvent.id(type: .transfer, subject: record.originalTransactionId, cause: cause), type: .transfer, appId: appId,
                environment: record.environment, appUserId: appUserId, productId: record.productId, transactionId: record.transactionId,
                originalTransactionId: record.originalTransactionId, occurredAt: now, recordedAt: now, details: details)
        }
    }
}
