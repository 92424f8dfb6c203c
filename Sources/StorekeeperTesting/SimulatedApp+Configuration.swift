import AppStoreSimulator
import StorekeeperDomain
import StorekeeperServer

extension SimulatedApp {
    /// The simulated App Store's view of a configured app, so its purchases verify.
    /// Auto-renewables get a one-month period (accelerated by the simulator).
    public init(_ app: AppConfiguration) {
        self.init(
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
