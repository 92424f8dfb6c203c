import Foundation
import StorekeeperDomain

/// The configuration `storekeeper serve --simulator` uses when no file is given: one app that
/// sells one product of every type, with well-known demo keys. Never use it in production.
public enum DemoConfiguration {
    public static let appApiKey = "demo-app-key-0123456789"
    public static let adminKey = "demo-admin-key-0123456789"
    public static let sharedSecret = "demo-shared-secret"
    public static let bundleId = "com.example.storekeeper.demo"

    public static let products: [Product] = [
        Product(
            productId: "com.example.coins100", type: .consumable, creditAmount: 100, priceMicros: 990_000, currency: "USD", displayName: "100 coins"),
        Product(productId: "com.example.removeads", type: .nonConsumable, priceMicros: 2_990_000, currency: "USD", displayName: "Remove ads"),
        Product(productId: "com.example.pro.monthly", type: .autoRenewable, priceMicros: 4_990_000, currency: "USD", displayName: "Pro, monthly"),
        Product(
            productId: "com.example.season.pass", type: .nonRenewing, duration: "P3M", priceMicros: 9_990_000, currency: "USD",
            displayName: "Season pass"),
        Product(productId: "com.example.free.tier", type: .freeSubscription, priceMicros: 0, currency: "USD", displayName: "Free tier"),
        Product(
            productId: "com.example.legacy.pack", type: .nonConsumable, status: .developerRemovedFromSale, priceMicros: 1_990_000, currency: "USD",
            displayName: "Legacy pack"),
    ]

    public static func configuration() -> StorekeeperConfiguration {
        var c = StorekeeperConfiguration()
        c.adminKey = adminKey
        c.apps = [
            AppConfiguration(
                id: "demo", bundleId: bundleId, sharedSecret: sharedSecret, acceptSandbox: true, apiKey: appApiKey,
                products: products)
        ]
        return c
    }
}
