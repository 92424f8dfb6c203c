public import Foundation
public import Persistence
public import StorekeeperDomain

/// A customer's own data (docs/CUSTOMERS.md): the attributes the app's backend or the app sets,
/// and deleting the customer, which keeps every money row under a tombstone and audits it.
public struct ManageCustomers: Sendable {
    public typealias Store = CustomerStore & IdentityStore

    let store: any Store

    public init(store: any Store) {
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

    /// Deletes the customer's personal data, their aliases' too (each first, then the user,
    /// whose deletion removes the links: run again, it finishes what a crash left). The audit entry
    /// names the tombstone, never the id deleted, and its reason keeps the operator's words
    /// without the customer's (their ids, e-mail, name and custom values). Nil when nothing was
    /// known of them.
    public func delete(appId: String, appUserId: String, actor: AuditActor, now: Date) async throws -> CustomerDeletion? {
        let tombstone = CustomerErasure.newTombstone()
        var rows: [String: Int] = [:]
        let aliases = try await store.aliases(appId: appId, appUserId: appUserId)
        var identifiers = [appUserId] + aliases
        for id in identifiers {
            guard let attributes = try await store.attributes(appId: appId, appUserId: id) else { continue }
            // A custom value of one or two characters (a flag, a tier) names no one, and scrubbing
            // it would scrub every such letter or digit of the reason.
            identifiers += [attributes.email, attributes.displayName].compactMap { $0 } + attributes.custom.values.filter { $0.count > 2 }
        }
        for alias in aliases {
            // A tombstone of its own: each id's events are numbered on their own.
            let erased = try await store.deleteCustomer(
                appId: appId, erasure: CustomerErasure(appUserId: alias, tombstone: CustomerErasure.newTombstone()), audit: nil, now: now)
            rows.merge(erased?.rows ?? [:], uniquingKeysWith: +)
        }
        let audit = AuditEntry(
            id: AuditEntry.freshId(), appId: appId, at: now, actor: actor.name, action: "customer_deleted",
            appUserId: tombstone, reason: CustomerErasure.scrub(actor.reason, identifiers: identifiers), subject: tombstone
        ).attributed(to: actor)
        let erased = try await store.deleteCustomer(
            appId: appId, erasure: CustomerErasure(appUserId: appUserId, tombstone: tombstone), audit: audit, now: now)
        guard let erased else { return rows.isEmpty ? nil : CustomerDeletion(tombstone: tombstone, rows: rows) }
        return CustomerDeletion(tombstone: tombstone, rows: rows.merging(erased.rows, uniquingKeysWith: +))
    }

    public func suspension(appId: String, appUserId: String) async throws -> AccessSuspension? {
        try await store.suspension(appId: appId, appUserId: appUserId)
    }

    /// Withholds access from one subscriber (`access_suspended`, then the entitlements'
    /// `entitlement_revoked`), audited. `cause` (a notification's UUID) makes the event's id;
    /// false when access was withheld already.
    public func suspend(appId: String, appUserId: String, reason: String, actor: AuditActor, cause: String?, now: Date) async throws -> Bool {
        let id = UUID().uuidString.lowercased()
        let suspension = AccessSuspension(reason: reason, since: now, actor: actor.declared ?? actor.name)
        let event = SubscriberEvent(
            id: SubscriberEvent.id(type: .accessSuspended, subject: id, cause: cause ?? id), type: .accessSuspended, appId: appId,
            environment: nil, appUserId: appUserId, occurredAt: now, recordedAt: now, details: SubscriberEvent.Details(reason: reason))
        let audit = AuditEntry(
            id: "audit_\(id)_suspend", appId: appId, at: now, actor: actor.name, action: "access_suspended", appUserId: appUserId, reason: reason,
            subject: "access"
        ).attributed(to: actor)
        return try await store.suspendAccess(
            appId: appId, appUserId: appUserId, suspension: suspension, audit: audit, events: EventBatch(events: [event]), now: now)
    }

    /// Lifts a suspension (`access_restored`, then `entitlement_granted` for what is active
    /// again), audited; false when there was none.
    public func restore(appId: String, appUserId: String, actor: AuditActor, now: Date) async throws -> Bool {
        let id = UUID().uuidString.lowercased()
        let event = SubscriberEvent(
            id: SubscriberEvent.id(type: .accessRestored, subject: id, cause: id), type: .accessRestored, appId: appId, environment: nil,
            appUserId: appUserId, occurredAt: now, recordedAt: now, details: SubscriberEvent.Details(reason: actor.reason))
        let audit = AuditEntry(
            id: "audit_\(id)_restore", appId: appId, at: now, actor: actor.name, action: "access_restored", appUserId: appUserId,
            reason: actor.reason, subject: "access"
        ).attributed(to: actor)
        return try await store.restoreAccess(
            appId: appId, appUserId: appUserId, audit: audit, events: EventBatch(events: [event]), now: now)
    }

    /// Apple says a parent or guardian withdrew consent for the customer holding `holders`'
    /// purchases: applies the app's policy to each (tombstones skipped). Safe to apply again
    /// (a redelivered notification): a suspended user stays suspended once, a deleted one is
    /// gone.
    public func applyConsentPolicy(
        _ policy: RescindConsentPolicy, appId: String, holders: [String], notificationUUID: String, now: Date
    ) async throws {
        let actor = AuditActor(name: "apple:RESCIND_CONSENT", reason: "notification \(notificationUUID)")
        for user in Set(holders).sorted() where !CustomerErasure.isTombstone(user) {
            switch policy {
            case .record: return
            case .revokeAccess:
                _ = try await suspend(appId: appId, appUserId: user, reason: "consent_rescinded", actor: actor, cause: notificationUUID, now: now)
            case .deleteData: _ = try await delete(appId: appId, appUserId: user, actor: actor, now: now)
            }
        }
    }
}
