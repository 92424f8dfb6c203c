import Foundation

/// What deleting a customer does to the rows that keep their purchases (docs/CUSTOMERS.md): the
/// app user id becomes a tombstone that names no one, the attributes go, and everything money
/// needs (transactions, subscriptions, ledger rows, events) stays, so finance still adds up.
/// Pure: the adapters read each row, pass it through here and write it back in one transaction.
public struct CustomerErasure: Sendable, Hashable {
    public var appUserId: String
    public var tombstone: String

    public init(appUserId: String, tombstone: String) {
        self.appUserId = appUserId
        self.tombstone = tombstone
    }

    /// A fresh tombstone: random, so it cannot be traced back to the id it replaced.
    public static func newTombstone() -> String { "deleted_" + UUID().uuidString.lowercased() }

    public static func isTombstone(_ appUserId: String) -> Bool { appUserId.hasPrefix("deleted_") }

    func replaced(_ id: String) -> String { id == appUserId ? tombstone : id }

    func replaced(_ id: String?) -> String? { id.map(replaced) }

    /// An event of this customer, or one of another user's that names them (a transfer's
    /// `fromAppUserId`, an owner): every mention replaced, the attributes dropped from its view.
    public func erase(_ event: SubscriberEvent) -> SubscriberEvent {
        var erased = event
        erased.id = eventId(event.id)
        erased.appUserId = replaced(event.appUserId)
        if var details = event.details {
            details.fromAppUserId = replaced(details.fromAppUserId)
            details.toAppUserId = replaced(details.toAppUserId)
            details.ownerAppUserId = replaced(details.ownerAppUserId)
            erased.details = details
        }
        if let view = event.entitlements, view.appUserId == appUserId { erased.entitlements = erase(view) }
        return erased
    }

    /// Event ids name their subject; only `consent_rescinded` ids name the user
    /// (`evt_{notification}_consent_rescinded_{appUserId}`).
    public func eventId(_ id: String) -> String {
        let suffix = "_\(EventType.consentRescinded.rawValue)_\(appUserId)"
        guard id.hasSuffix(suffix) else { return id }
        return String(id.dropLast(appUserId.utf8.count)) + tombstone
    }

    public func erase(_ view: SubscriberView) -> SubscriberView {
        var erased = view
        erased.appUserId = replaced(view.appUserId)
        erased.attributes = nil
        erased.history = view.history.map { record in
            var record = record
            record.appUserId = replaced(record.appUserId)
            return record
        }
        erased.provisionalEntitlements = view.provisionalEntitlements.map { grant in
            var grant = grant
            grant.appUserId = replaced(grant.appUserId)
            return grant
        }
        return erased
    }

    public func erase(_ grant: PromotionalGrant) -> PromotionalGrant {
        var erased = grant
        erased.appUserId = replaced(grant.appUserId)
        return erased
    }

    public func erase(_ entry: AuditEntry) -> AuditEntry {
        var erased = entry
        erased.appUserId = replaced(entry.appUserId)
        erased.subject = replaced(entry.subject)
        return erased
    }
}
