public import Foundation
public import StorekeeperDomain

/// Operators' promotional grants and the audit log of their actions.
public protocol PromotionalGrantStore: Sendable {
    /// Stores `grant`, its audit entry and `events` in one transaction. A grant whose id is
    /// stored already is left as it is and returned, with nothing else written (a retry).
    func recordPromotionalGrant(_ grant: PromotionalGrant, audit: AuditEntry, events: EventBatch, now: Date) async throws -> PromotionalGrant
    /// Ends a grant not revoked yet at `at`, with its audit entry and the events `events` makes of
    /// the revoked grant, in one transaction (guarded by "not revoked"). Returns the grant as
    /// stored afterwards and whether this call revoked it; nil when there is no such grant.
    func revokePromotionalGrant(
        appId: String, grantId: String, at: Date, audit: AuditEntry, events: @escaping @Sendable (PromotionalGrant) -> EventBatch, now: Date
    ) async throws -> (grant: PromotionalGrant, revoked: Bool)?
    func promotionalGrant(appId: String, grantId: String) async throws -> PromotionalGrant?
    /// Every grant of one app user, revoked and ended ones too, oldest first.
    func promotionalGrants(appId: String, appUserId: String) async throws -> [PromotionalGrant]
    /// The audit entries `query` asks for, oldest first.
    func auditEntries(matching query: AuditQuery) async throws -> [RecordedAuditEntry]
    /// The audit entries naming one app user, newest first (a customer's page).
    func auditEntries(appId: String, appUserId: String, limit: Int) async throws -> [RecordedAuditEntry]
}

extension PromotionalGrantStore {
    /// The app's audit entries after `cursor`, oldest first.
    public func auditEntries(appId: String, after cursor: Int64, limit: Int) async throws -> [RecordedAuditEntry] {
        try await auditEntries(matching: AuditQuery(appIds: [appId], after: cursor, limit: limit))
    }
}

/// An audit entry with its place in the app's log.
public struct RecordedAuditEntry: Sendable, Hashable {
    public var cursor: Int64
    public var entry: AuditEntry

    public init(cursor: Int64, entry: AuditEntry) {
        self.cursor = cursor
        self.entry = entry
    }
}
