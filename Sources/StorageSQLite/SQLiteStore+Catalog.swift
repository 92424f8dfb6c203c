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
            return db.changesCount == 1
        }
    }

    static func writeProduct(_ db: Database, appId: String, product: Product, now: Date, replace: Bool) throws {
        let conflict =
            replace
            ? "DO UPDATE SET type = excluded.type, status = excluded.status, body = excluded.body, updated_at = excluded.updated_at"
            : "DO NOTHING"
        try db.execute(
            sql: """
                INSERT INTO products (app_id, product_id, type, status, body, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (app_id, product_id) \(conflict)
                """,
            arguments: [
                appId, product.productId, product.type.rawValue, product.status.rawValue, StoredJSON.encode(product),
                StoredTime.ms(now),
            ])
    }
}
