public import Foundation
public import Persistence
public import StorekeeperDomain

/// The app's catalog as the operator edits it and the app reads it. Only products Ready for
/// Sale are offered to an app (server mode rule 1): a product removed from sale must not reach
/// a paywall even though purchases of it still verify.
public struct ManageCatalog: Sendable {
    let store: any CatalogStore

    public init(store: any CatalogStore) {
        self.store = store
    }

    public func products(appId: String) async throws -> [Product] {
        try await store.products(appId: appId)
    }

    public func product(appId: String, productId: String) async throws -> Product? {
        try await store.product(appId: appId, productId: productId)
    }

    /// What an app may offer for sale now.
    public func sellable(appId: String) async throws -> [Product] {
        try await store.products(appId: appId).filter { $0.status == .readyForSale }
    }

    /// Adds a product the catalog does not hold yet; false when it does (a change goes through `save`).
    public func create(appId: String, product: Product, now: Date) async throws -> Bool {
        guard try await store.product(appId: appId, productId: product.productId) == nil else { return false }
        try await store.upsertProduct(appId: appId, product: product, now: now)
        return true
    }

    public func save(appId: String, product: Product, now: Date) async throws {
        try await store.upsertProduct(appId: appId, product: product, now: now)
    }

    /// False when there was no such product.
    public func delete(appId: String, productId: String) async throws -> Bool {
        try await store.deleteProduct(appId: appId, productId: productId)
    }

    /// The app's named entitlements.
    public func entitlements(appId: String) async throws -> [EntitlementDefinition] {
        try await store.entitlementDefinitions(appId: appId)
    }

    /// Creates or replaces one; the problems of an invalid definition instead (nothing stored).
    /// Products need not be in the catalog: a definition may name a product before it is sold.
    /// The change is audited with the definition as saved.
    public func save(appId: String, entitlement: EntitlementDefinition, actor: AuditActor, now: Date) async throws -> [String] {
        let problems = entitlement.problems()
        guard problems.isEmpty else { return problems }
        let before = try await store.entitlementDefinitions(appId: appId).first { $0.id == entitlement.id }
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: "entitlement_saved", reason: actor.reason, subject: entitlement.id, saved: entitlement
        ).attributed(to: actor).before(before)
        try await store.upsertEntitlement(appId: appId, definition: entitlement, audit: audit, now: now)
        return []
    }

    /// False when there was no such entitlement (and nothing audited).
    public func deleteEntitlement(appId: String, entitlementId: String, actor: AuditActor, now: Date) async throws -> Bool {
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: "entitlement_deleted", reason: actor.reason, subject: entitlementId,
            saved: nil as EntitlementDefinition?
        ).attributed(to: actor).before(try await store.entitlementDefinitions(appId: appId).first { $0.id == entitlementId })
        return try await store.deleteEntitlement(appId: appId, entitlementId: entitlementId, audit: audit, now: now)
    }
}
