public import Foundation
import GRDB
import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    public func products(appId: String) async throws -> [Product] {
        try await read { db in try Self.products(db, appId: appId) }
    }

    static func products(_ db: Database, appId: String) throws -> [Product] {
        try String.fetchAll(db, sql: "SELECT body FROM products WHERE app_id = ? ORDER BY product_id", arguments: [appId])
            .compactMap { StoredJSON.decode(Product.self, $0) }
    }

    public func product(appId: String, productId: String) async throws -> Product? {
        try await read { db in
            StoredJSON.decode(
                Product.self,
                try String.fetchOne(
                    db, sql: "SELECT body FROM products WHERE app_id = ? AND product_id = ?", arguments: [appId, productId]))
        }
    }

    public func seedProducts(appId: String, products: [Product], now: Date) async throws {
        try await pool.write { db in
            for product in products {
                try Self.writeProduct(db, appId: appId, product: product, now: now, replace: false)
            }
        }
    }

    public func upsertProduct(appId: String, product: Product, now: Date) async throws {
        try await pool.write { db in try Self.writeProduct(db, appId: appId, product: product, now: now, replace: true) }
    }

    public func deleteProduct(appId: String, productId: String) async throws -> Bool {
        try await pool.write { db in
            try db.execute(sql: "DELETE FROM products WHERE app_id = ? AND product_id = ?", arguments: [appId, productId])
            guard db.changesCount == 1 else { return false }
            try Self.dropFigures(db, appId: appId)
            return true
        }
    }

    static func writeProduct(_ db: Database, appId: String, product: Product, now: Date, replace: Bool) throws {
        let conflict =
            replace
            ? "DO UPDATE SET type = excluded.type, status = excluded.status, body = excluded.body, updated_at = excluded.updated_at"
            : "DO NOTHING"
        let body = StoredJSON.encode(product)
        let before = try String.fetchOne(
            db, sql: "SELECT body FROM products WHERE app_id = ? AND product_id = ?", arguments: [appId, product.productId])
        try db.execute(
            sql: """
                INSERT INTO products (app_id, product_id, type, status, body, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id, product_id) \(conflict)
                """,
            arguments: [
                appId, product.productId, product.type.rawValue, product.status.rawValue, body, StoredTime.ms(now),
            ])
        // A new or changed product can change what the kept figures say (a billing period, a list price).
        if before == nil || (replace && before != body) { try dropFigures(db, appId: appId) }
    }

    public func entitlementDefinitions(appId: String) async throws -> [EntitlementDefinition] {
        try await read { db in try Self.entitlementDefinitions(db, appId: appId) }
    }

    static func entitlementDefinitions(_ db: Database, appId: String) throws -> [EntitlementDefinition] {
        try String.fetchAll(
            db.cachedStatement(sql: "SELECT body FROM entitlement_definitions WHERE app_id = ? ORDER BY entitlement_id"),
            arguments: [appId]
        ).compactMap { StoredJSON.decode(EntitlementDefinition.self, $0) }
    }

    public func seedEntitlements(appId: String, definitions: [EntitlementDefinition], now: Date) async throws {
        try await pool.write { db in
            for definition in definitions {
                try Self.writeEntitlement(db, appId: appId, definition: definition, now: now, replace: false)
            }
        }
    }

    public func upsertEntitlement(appId: String, definition: EntitlementDefinition, audit: AuditEntry, now: Date) async throws {
        try await pool.write { db in
            try Self.writeEntitlement(db, appId: appId, definition: definition, now: now, replace: true)
            try Self.recordAudit(db, audit)
        }
    }

    public func deleteEntitlement(appId: String, entitlementId: String, audit: AuditEntry, now: Date) async throws -> Bool {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM entitlement_definitions WHERE app_id = ? AND entitlement_id = ?", arguments: [appId, entitlementId])
            guard db.changesCount == 1 else { return false }
            try Self.recordAudit(db, audit)
            return true
        }
    }

    static func writeEntitlement(_ db: Database, appId: String, definition: EntitlementDefinition, now: Date, replace: Bool) throws {
        try writeBody(
            db, table: "entitlement_definitions", keys: ["app_id": appId, "entitlement_id": definition.id], body: StoredJSON.encode(definition),
            now: now, replace: replace)
    }

    /// One row of a table keyed by `keys` whose value is a JSON `body` (entitlement definitions,
    /// offerings, targeting): inserted, or on conflict replaced (`replace`) or kept (a seed).
    static func writeBody(_ db: Database, table: String, keys: KeyValuePairs<String, String>, body: String, now: Date, replace: Bool) throws {
        let columns = keys.map(\.key)
        let conflict = replace ? "DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at" : "DO NOTHING"
        try db.execute(
            sql: """
                INSERT INTO \(table) (\(columns.joined(separator: ", ")), body, updated_at) VALUES (\(Array(repeating: "?", count: columns.count + 2).joined(separator: ", ")))
                ON CONFLICT (\(columns.joined(separator: ", "))) \(conflict)
                """,
            arguments: StatementArguments(keys.map(\.value) + [body]) + [StoredTime.ms(now)])
    }
}
