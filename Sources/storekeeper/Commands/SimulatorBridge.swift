import AppStoreSimulator
import StorekeeperDomain
import StorekeeperServer

/// Declares the server's apps to an embedded simulator so that its purchases verify.
enum SimulatorBridge {
    static func simulatedApp(_ app: AppConfiguration) -> SimulatedApp {
        SimulatedApp(
            bundleId: app.bundleId, sharedSecret: app.sharedSecret,
            products: app.products.map { product in
                let kind: SimulatedProduct.Kind =
                    switch product.type {
                    case .consumable: .consumable
                    case .autoRenewable: .autoRenewable
                    case .nonRenewing: .nonRenewing
                    case .freeSubscription: .freeSubscription
                    default: .nonConsumable
                    }
                return SimulatedProduct(
                    productId: product.productId, kind: kind, period: product.type == .autoRenewable ? "P1M" : nil,
                    priceMicros: product.priceMicros, currency: product.currency)
            })
    }
}
