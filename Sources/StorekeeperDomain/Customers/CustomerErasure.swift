import Foundation

/// What deleting a customer does to the rows that keep their purchases (docs/CUSTOMERS.md): the
/// app user id becomes a tombstone that names no one, the attributes go, and everything money
/// needs (transactions, subscriptions, ledger rows, events) stays, so finance still adds up.
/// Pure: the adapters read each row, pass it through here and write it back in one transaction.
public struct CustomerErasure: Sendable, Hashable {
    public var appUserId: String
    public var tombstone: String
    /// Each of the customer's credit spends' idempotency key (chosen by the caller: it may name
    /// them) and the key it becomes, so the `credits_spent` events keep pointing at their spend.
    /// The adapters fill it from the rows before erasing events.
    public var spendIds: [String: String] = [:]

    /// What an operator's or a backend's words about the customer become: a reason may name
    /// anyone and anything (an e-mail, a phone number, a ticket), so it is not searched and
    /// cleaned, it is gone.
    public static let erasedText = "[erased]"
    /// Reasons that are the server's own words, kept (Apple's consent policy's).
    static let machineReasons: Set<String> = ["consent_rescinded"]
    /// Events whose `details.reason` carries an operator's or a backend's words.
    static let wordedEvents: Set<EventType> = [.creditsSpent, .promotionalGrant, .promotionalGrantRevoked, .accessSuspended, .accessRestored]

    public init(appUserId: String, tombstone: String) {
        self.appUserId = appUserId
        self.tombstone = tombstone
    }

    /// A fresh tombstone: random, so it cannot be traced back to the id it replaced.
    public static func newTombstone() -> String { "deleted_" + UUID().uuidString.lowercased() }

    public static func isTombstone(_ appUserId: String) -> Bool { appUserId.hasPrefix("deleted_") }

    func replaced(_ id: String) -> String { id == appUserId ? tombstone : id }

    static func erased(_ reason: String) -> String { reason.isEmpty || machineReasons.contains(reason) ? reason : erasedText }

    /// The key a spend's row takes, from its row's cursor: unique, and naming no one.
    public static func spendId(cursor: Int64) -> String { "erased_\(cursor)" }

    /// Free text that must stay readable (the reason for the deletion itself) with every
    /// `identifiers` (the id, the e-mail, the name, custom values) replaced, longest first so a
    /// name inside an e-mail goes with the e-mail, case-insensitively.
    public static func scrub(_ text: String, identifiers: [String]) -> String {
        var text = text
        for identifier in Set(identifiers.filter { !$0.isEmpty }).sorted(by: { ($0.count, $0) > ($1.count, $1) }) {
            text = text.replacingOccurrences(of: identifier, with: "[deleted]", options: [.caseInsensitive])
        }
        return text
    }

    func replaced(_ id: String?) -> String? { id.map(replaced) }

    /// An event of this customer, or one of another user's that names them (a transfer's
    /// `fromAppUserId`, an owner): every mention replaced, the attributes dropped from its view.
    /// The customer's own events also lose the words an operator or backend wrote, and an id
    /// built from their id, their spend's key or a hash of their id (a guess could be checked
    /// against it) becomes one built from the tombstone and the event's row, `cursor`.
    public func erase(_ event: SubscriberEvent, cursor: Int64) -> SubscriberEvent {
        var erased = event
        erased.id = eventId(event.id)
        erased.appUserId = replaced(event.appUserId)
        if var details = event.details {
            details.fromAppUserId = replaced(details.fromAppUserId)
            details.toAppUserId = replaced(details.toAppUserId)
            details.ownerAppUserId = replaced(details.ownerAppUserId)
            if event.appUserId == appUserId {
                if Self.wordedEvents.contains(event.type) { details.reason = details.reason.map(Self.erased) }
                details.spendId = details.spendId.map { spendIds[$0] ?? Self.erasedText }
            }
            erased.details = details
        }
        if event.appUserId == appUserId, event.type == .creditsSpent || event.id.contains(appUserId) {
            erased.id = SubscriberEvent.id(type: event.type, subject: String(cursor), cause: tombstone)
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
        // The anonymous ids linked to the customer and their Apple account's app transaction
        // name them as surely as their id does: both go with the rows they came from.
        erased.aliases = nil
        erased.appTransaction = nil
        erased.accessSuspended = view.accessSuspended.map(erase)
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
        erased.reason = Self.erased(grant.reason)
        return erased
    }

    public func erase(_ suspension: AccessSuspension) -> AccessSuspension {
        var erased = suspension
        erased.reason = Self.erased(suspension.reason)
        return erased
    }

    /// An entry about the customer: what was done, by whom and when stay; the reason and the
    /// object as saved and as it was before (a grant with its reason) go.
    public func erase(_ entry: AuditEntry) -> AuditEntry {
        var erased = entry
        erased.appUserId = replaced(entry.appUserId)
        erased.subject = replaced(entry.subject)
        erased.reason = Self.erased(entry.reason)
        erased.change = nil
        erased.before = nil
        return erased
    }
}
