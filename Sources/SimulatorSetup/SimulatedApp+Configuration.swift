public import AppStoreSimulator
import Crypto
import StorekeeperDomain
public import StorekeeperServer

extension SimulatedApp {
    /// The simulated App Store's view of a configured app, so its purchases verify.
    /// Auto-renewables get their catalog billing period, a month by default (accelerated by the simulator).
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
                // The app's promotional offers, sold at half the product's price for one period
                // (App Store Connect holds an offer's price; the server's configuration does not).
                // Its win-back offers too, which Apple names in a lapsed subscriber's renewal info.
                let offers = app.offers.filter { $0.productId == product.productId }.map {
                    SimulatedOffer(
                        id: $0.id, discountType: "PAY_AS_YOU_GO", priceMicros: (product.priceMicros ?? 0) / 2, period: product.duration,
                        winBack: $0.kind == .winBack ? true : nil)
                }
                return SimulatedProduct(
                    productId: product.productId, kind: kind, period: product.type == .autoRenewable ? product.duration ?? "P1M" : nil,
                    priceMicros: product.priceMicros, currency: product.currency, offers: offers.isEmpty ? nil : offers)
            },
            appAppleId: app.appAppleId,
            serverAPIKeys: Self.keys(app))
    }

    /// Every In-App Purchase key the app's configuration holds (the Server API's, and the one
    /// offers are signed with when it is another): Apple accepts any of an app's keys for each use.
    static func keys(_ app: AppConfiguration) -> [SimulatedAPIKey]? {
        var keys: [SimulatedAPIKey] = []
        for key in [app.serverAPI, app.offerSigning].compactMap({ $0 }) where !keys.contains(where: { $0.keyId == key.keyId }) {
            guard let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: key.privateKeyPEM) else { continue }
            keys.append(SimulatedAPIKey(keyId: key.keyId, issuerId: key.issuerId, publicKeyPEM: privateKey.publicKey.pemRepresentation))
        }
        return keys.isEmpty ? nil : keys
    }
}

extension ServerAPIKeyConfiguration {
    /// A fresh In-App Purchase key, as App Store Connect would issue one (for tests and the
    /// built-in simulator; the simulator learns its public half).
    public static func generated(keyId: String = "SIMKEY0001", issuerId: String = "57246542-96fe-1a63-e053-0824d011072a") -> Self {
        ServerAPIKeyConfiguration(issuerId: issuerId, keyId: keyId, privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation)
    }
}
