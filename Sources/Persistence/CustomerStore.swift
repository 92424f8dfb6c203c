public import Foundation
public import StorekeeperDomain

/// Customers' own data: their attributes, and their deletion (docs/CUSTOMERS.md).
public protocol CustomerStore: Sendable {
    func attributes(appId: String, appUserId: String) async throws -> SubscriberAttributes?
    /// Reads the stored attributes (none: empty) and writes what `change` makes of them, in one
    /// transaction, so two changes at once never lose each other's keys. Empty attributes
    /// remove the row. The stored value is left as it was when `change` fails.
    func updateAttributes(
        appId: String, appUserId: String, now: Date,
        _ change: @escaping @Sendable (SubscriberAttributes) -> Result<SubscriberAttributes, AttributeProblems>
    ) async throws -> Result<SubscriberAttributes, AttributeProblems>
    /// Replaces the customer's app user id with `erasure.tombstone` in every row that keeps their
    /// purchases (and in other users' events that name them), removes their attributes, offering
    /// override, aliases and verification hints, and records `audit` (when given), in one
    /// transaction. Nil when no row named them (nothing is written then).
    func deleteCustomer(appId: String, erasure: CustomerErasure, audit: AuditEntry?, now: Date) async throws -> CustomerDeletion?
    func suspension(appId: String, appUserId: String) async throws -> AccessSuspension?
    /// Withholds access (when it is not withheld already: the same suspension twice changes
    /// nothing), with `audit` and the events `events` records, in one transaction. False when
    /// access was withheld before (nothing written).
    func suspendAccess(
        appId: String, appUserId: String, suspension: AccessSuspension, audit: AuditEntry, events: EventBatch, now: Date
    ) async throws -> Bool
    /// Lifts a suspension, with `audit` and `events`, in one transaction; false when there was none.
    func restoreAccess(appId: String, appUserId: String, audit: AuditEntry, events: EventBatch, now: Date) async throws -> Bool
    /// Every table with a text column holding `text` anywhere, with how many rows do: what a
    /// deletion is checked against (no table may still hold the deleted id).
    func tablesMentioning(_ text: String) async throws -> [String: Int]
    /// The customers `text` names exactly, as a transaction id, an original transaction id, an
    /// `appAccountToken` (lower-cased) or an e-mail (`CustomerMatch.normalizedEmail`), each through an
    /// index; at most `limit`, each user and field once.
    func customerMatches(appId: String, text: String, limit: Int) async throws -> [CustomerMatch]
}

/// A customer found by a support search, and by which field.
public struct CustomerMatch: Codable, Sendable, Hashable {
    public enum Field: String, Codable, Sendable, CaseIterable {
        case transactionId, originalTransactionId, appAccountToken, email
    }

    public var appUserId: String
    public var field: Field

    public init(appUserId: String, field: Field) {
        self.appUserId = appUserId
        self.field = field
    }

    /// How e-mails are stored for lookup and searched: spaces trimmed, ASCII letters lower-cased
    /// (what both databases' `trim` and `lower` do alike, so rows migrated in SQL match).
    public static func normalizedEmail(_ email: String) -> String {
        String(
            String.UnicodeScalarView(
                email.trimmingCharacters(in: CharacterSet(charactersIn: " ")).unicodeScalars.map { scalar in
                    (65...90).contains(scalar.value) ? Unicode.Scalar(UInt8(scalar.value + 32)) : scalar
                }))
    }
}

/// What a deletion changed, by table.
public struct CustomerDeletion: Codable, Sendable, Hashable {
    public var tombstone: String
    /// Rows changed or removed, by table name.
    public var rows: [String: Int]

    public init(tombstone: String, rows: [String: Int]) {
        self.tombstone = tombstone
        self.rows = rows
    }
}

/// The customer's app transaction, as the app last posted it (docs/CUSTOMERS.md).
public protocol AppTransactionStore: Sendable {
    func appTransaction(appId: String, appUserId: String) async throws -> CustomerAppTransaction?
    /// Keeps `record` unless the stored one was signed later (a replayed older copy changes
    /// nothing); answers what is stored afterwards.
    func recordAppTransaction(appId: String, appUserId: String, _ record: CustomerAppTransaction) async throws -> CustomerAppTransaction
}
