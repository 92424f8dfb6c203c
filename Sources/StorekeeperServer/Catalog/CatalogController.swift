import Foundation
import Hummingbird
import NIOCore
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// The app's catalog as operators edit it: products (and the Xcode StoreKit configuration file
/// made from them) and named entitlements.
struct CatalogController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin")
        admin.get("apps/:app/products") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try StorekeeperJSON.response(
                ProductList(products: try await context.useCases.catalog.products(appId: app.id).map(CatalogProduct.init)))
        }
        admin.post("apps/:app/products") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let product = try await decodeProduct(request, productId: nil)
            guard try await context.useCases.catalog.create(appId: app.id, product: product, now: context.now()) else {
                throw StorekeeperError(.conflict, "product '\(product.productId)' exists; use PUT to change it")
            }
            return try StorekeeperJSON.response(product, status: .created)
        }
        admin.put("apps/:app/products/:productId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let product = try await decodeProduct(request, productId: try ctx.parameters.decoded("productId"))
            try await context.useCases.catalog.save(appId: app.id, product: product, now: context.now())
            return try StorekeeperJSON.response(product)
        }
        admin.delete("apps/:app/products/:productId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let productId = try ctx.parameters.decoded("productId")
            guard try await context.useCases.catalog.delete(appId: app.id, productId: productId) else {
                throw StorekeeperError(.notFound, "no product '\(productId)'")
            }
            return Response(status: .noContent)
        }
        admin.get("apps/:app/storekit-config") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let file = StoreKitConfigurationFile.contents(
                appId: app.id, products: try await context.useCases.catalog.products(appId: app.id), groups: app.subscriptionGroups,
                offers: app.offers)
            return Response(
                status: .ok,
                headers: [.contentType: "application/json", .contentDisposition: #"attachment; filename="Products.storekit""#],
                body: .init(byteBuffer: ByteBuffer(bytes: try StoreKitConfigurationFile.encode(file))))
        }
        registerEntitlements(on: admin)
    }

    /// The app's named entitlements: listed, created or replaced whole by id, deleted. A change
    /// shows in every subscriber answer and event from then on (they are built at read time).
    private func registerEntitlements(on admin: RouterGroup<AdminRequestContext>) {
        admin.get("apps/:app/entitlements") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try StorekeeperJSON.response(["entitlements": try await context.useCases.catalog.entitlements(appId: app.id)])
        }
        admin.put("apps/:app/entitlements/:entitlementId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("entitlementId")
            struct Body: Decodable { var products: [String] }
            let actor = try AdminInput.actor(request, ctx)
            let data = try await context.body(request)
            let body = try StorekeeperJSON.decode(Body.self, from: data)
            try AdminInput.refuseFields(data, except: ["products"], note: "the path names the entitlement")
            let definition = EntitlementDefinition(id: id, products: body.products)
            let problems = try await context.useCases.catalog.save(appId: app.id, entitlement: definition, actor: actor, now: context.now())
            guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
            return try StorekeeperJSON.response(definition)
        }
        admin.delete("apps/:app/entitlements/:entitlementId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let id = try ctx.parameters.decoded("entitlementId")
            guard
                try await context.useCases.catalog.deleteEntitlement(
                    appId: app.id, entitlementId: id, actor: try AdminInput.actor(request, ctx), now: context.now())
            else {
                throw StorekeeperError(.notFound, "no entitlement '\(id)'")
            }
            return Response(status: .noContent)
        }
    }

    private func decodeProduct(_ request: Request, productId: String?) async throws -> Product {
        var product = try StorekeeperJSON.decode(Product.self, from: try await context.body(request))
        // The body must be a valid product on its own; the path's id then wins over the body's.
        try Self.requireValid(product)
        if let productId, productId != product.productId {
            product.productId = productId
            try Self.requireValid(product)
        }
        return product
    }

    private static func requireValid(_ product: Product) throws {
        let problems = product.validationProblems()
        guard problems.isEmpty else { throw StorekeeperError(.invalidProduct, problems.joined(separator: "; ")) }
    }
}
