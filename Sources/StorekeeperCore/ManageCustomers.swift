public import Foundation
public import Persistence
public import StorekeeperDomain

/// A customer's own data (docs/CUSTOMERS.md): the attributes the app's backend or the app sets,
/// and deleting the customer, which keeps every money row under a tombstone and audits it.
public struct ManageCustomers: Sendable {
    let store: any CustomerStore

    public init(store: any CustomerStore) {
        self.store = store
    }

    public func attributes(appId: String, appUserId: String) async throws -> SubscriberAttributes {
        try await store.attributes(appId: appId, appUserId: appUserId) ?? SubscriberAttributes()
    }

    /// Applies a merge patch in one transaction; the problems instead (nothing written).
    public func update(
        appId: String, appUserId: String, change: AttributeChange, now: Date
    ) async throws -> Result<SubscriberAttributes, AttributeProblems> {
        let problems = change.problems()
        guard problems.isEmpty else { return .failure(AttributeProblems(problems: problems)) }
        return try await store.updateAttributes(appId: appId, appUserId: appUserId, now: now) { $0.applying(change) }
    }

    /// Deletes the customer's personal data. The audit entry names the tombstone, never the id
    /// deleted. Nil when nothing was known of them.
    public func delete(appId: String, appUserId: String, actor: AuditActor, now: Date) async throws -> CustomerDeletion? {
        let erasure = CustomerErasure(appUserId: appUserId, tombstone: CustomerErasure.newTombstone())
        let audit = AuditEntry(
            id: "audit_\(UUID().uuidString.lowercased())", appId: appId, at: now, actor: actor.name, action: "customer_deleted",
            appUserId: erasure.tombstone, reason: actor.reason, subject: erasure.tombstone)
        return try await store.deleteCustomer(appId: appId, erasure: erasure, audit: audit, now: now)
    }
}
