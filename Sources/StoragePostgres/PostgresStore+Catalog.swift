public import Foundation
import Logging
import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    public func products(appId: String) async throws -> [Product] {
        try await read { connection in try await Self.products(connection, appId: appId, logger: self.logger) }
    }

    static func products(_ connection: PostgresConnection, appId: String, logger: Logger) async throws -> [Product] {
        try await connection.rows("SELECT body FROM products WHERE app_id = \(appId) ORDER BY product_id", logger: logger)
            .compactMap { StoredJSON.decode(Product.self, try $0.value("body", as: String.self)) }
    }

    public func product(appId: String, productId: String) async throws -> Product? {
        try await read { connection in
            let rows = try await connection.rows(
                "SELECT body FROM products WHERE app_id = \(appId) AND product_id = \(productId)", logger: self.logger)
            return try rows.first.flatMap { StoredJSON.decode(Product.self, try $0.value("body", as: String.self)) }
        }
    }

    public func seedProducts(appId: String, products: [Product], now: Date) async throws {
        try await transaction { connection in
            for product in products {
                try await Self.writeProduct(connection, appId: appId, product: product, now: now, replace: false, logger: self.logger)
            }
        }
    }

    public func upsertProduct(appId: String, product: Product, now: Date) async throws {
        try await transaction { connection in
            try await Self.writeProduct(connection, appId: appId, product: product, now: now, replace: true, logger: self.logger)
        }
    }

    public func deleteProduct(appId: String, productId: String) async throws -> Bool {
        try await transaction { connection in
            let deleted =
                try await connection.count(
                    "DELETE FROM products WHERE app_id = \(appId) AND product_id = \(productId) RETURNING 1", logger: self.logger) == 1
            if deleted { try await Self.dropFigures(connection, appId: appId, logger: self.logger) }
            return deleted
        }
    }

    static func writeProduct(
        _ connection: PostgresConnection, appId: String, product: Product, now: Date, replace: Bool, logger: Logger
    ) async throws {
        let conflict =
            replace
            ? "DO UPDATE SET type = excluded.type, status = excluded.status, body = excluded.body, updated_at = excluded.updated_at"
            : "DO NOTHING"
        let body = StoredJSON.encode(product)
        let before = try await connection.rows(
            "SELECT body FROM products WHERE app_id = \(appId) AND product_id = \(product.productId)", logger: logger
        ).first.map { try $0.value("body", as: String.self) }
        try await connection.execute(
            """
            INSERT INTO products (app_id, product_id, type, status, body, updated_at)
            VALUES (\(appId), \(product.productId), \(product.type.rawValue), \(product.status.rawValue), \(body),
                \(StoredTime.ms(now)))
            ON CONFLICT (app_id, product_id) \(unescaped: conflict)
            """, logger: logger)
        // A new or changed product can change what the kept figures say (a billing period, a list price).
        if before == nil || (replace && before != body) { try await dropFigures(connection, appId: appId, logger: logger) }
    }

    public func entitlementDefinitions(appId: String) async throws -> [EntitlementDefinition] {
        try await read { connection in try await Self.entitlementDefinitions(connection, appId: appId, logger: self.logger) }
    }

    static func entitlementDefinitions(_ connection: PostgresConnection, appId: String, logger: Logger) async throws -> [EntitlementDefinition] {
        try await connection.rows(
            "SELECT body FROM entitlement_definitions WHERE app_id = \(appId) ORDER BY entitlement_id", logger: logger
        ).compactMap { StoredJSON.decode(EntitlementDefinition.self, try $0.value("body", as: String.self)) }
    }

    public func seedEntitlements(appId: String, definitions: [EntitlementDefinition], now: Date) async throws {
        try await transaction { connection in
            for definition in definitions {
                try await Self.writeEntitlement(connection, appId: appId, definition: definition, now: now, replace: false, logger: self.logger)
            }
        }
    }

    public func upsertEntitlement(appId: String, definition: EntitlementDefinition, audit: AuditEntry, now: Date) async throws {
        try await transaction { connection in
            try await Self.writeEntitlement(connection, appId: appId, definition: definition, now: now, replace: true, logger: self.logger)
            try await Self.recordAudit(connection, audit, logger: self.logger)
        }
    }

    public func deleteEntitlement(appId: String, entitlementId: String, audit: AuditEntry, now: Date) async throws -> Bool {
        try await transaction { connection in
            guard
                try await connection.count(
                    "DELETE FROM entitlement_definitions WHERE app_id = \(appId) AND entitlement_id = \(entitlementId) RETURNING 1",
                    logger: self.logger) == 1
            else { return false }
            try await Self.recordAudit(connection, audit, logger: self.logger)
            return true
        }
    }

    static func writeEntitlement(
        _ connection: PostgresConnection, appId: String, definition: EntitlementDefinition, now: Date, replace: Bool, logger: Logger
    ) async throws {
        try await writeBody(
            connection, table: "entitlement_definitions", keys: ["app_id": appId, "entitlement_id": definition.id],
            body: StoredJSON.encode(definition), now: now, replace: replace, logger: logger)
    }

    /// One row of a table keyed by `keys` whose value is a JSON `body` (entitlement definitions,
    /// offerings, targeting): inserted, or on conflict replaced (`replace`) or kept (a seed).
    static func writeBody(
        _ connection: PostgresConnection, table: String, keys: KeyValuePairs<String, String>, body: String, now: Date, replace: Bool,
        logger: Logger
    ) async throws {
        let columns = keys.map(\.key).joined(separator: ", ")
        var bindings = PostgresBindings()
        for (_, value) in keys { bindings.append(value) }
        bindings.append(body)
        bindings.append(StoredTime.ms(now))
        let placeholders = (1...(keys.count + 2)).map { "$\($0)" }.joined(separator: ", ")
        let conflict = replace ? "DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at" : "DO NOTHING"
        // Table and column names are this file's constants; every value is a bound parameter.
        try await connection.execute(
            PostgresQuery(
                unsafeSQL: "INSERT INTO \(table) (\(columns), body, updated_at) VALUES (\(placeholders)) ON CONFLICT (\(columns)) \(conflict)",
                binds: bindings), logger: logger)
    }
}
