import AppStoreModels
import Foundation
public import StorekeeperDomain
import StorekeeperWire

/// The configuration `storekeeper serve --simulator` uses when no file is given: one app that
/// sells one product of every type, with well-known demo keys. Never use it in production.
public enum DemoConfiguration {
    public static let appApiKey = "demo-app-key-0123456789"
    public static let adminKey = "demo-admin-key-0123456789"
    public static let sharedSecret = "demo-shared-secret"
    public static let bundleId = "com.example.storekeeper.demo"
    /// The demo app's Apple id, as App Store Connect shows it: production notifications and
    /// Status/History answers carry it, and Apple's verifier checks it.
    public static let appAppleId: Int64 = 6_450_000_001
    /// The app's publishable client key, the secret its "backend" signs user tokens with, and
    /// the key that signs answers to client calls (its public half is what an app pins). For
    /// the StorekeeperKit example only: published here, so never secret.
    public static let clientKey = "demo-client-key-0123456789"
    public static let userTokenSecret = "demo-user-token-secret-0123456789abcdef"
    public static let signingKeyId = "demo-1"
    public static let signingPrivateKeyPEM = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeS0AJObhK5mBqCPD
        S7mxpePtaWf+TF2BT/DhYHw4TeChRANCAAQxaeIrjIEAZK/RCesgw6UZlA2fFOrH
        RD8YVTNd2eT+gqJnKod9YvRuOU4JBlinJtemlYhZu+gRk4hVYCDt7xhi
        -----END PRIVATE KEY-----
        """
    public static let signingPublicKeyPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMWniK4yBAGSv0QnrIMOlGZQNnxTq
        x0Q/GFUzXdnk/oKiZyqHfWL0bjlOCQZYpybXppWIWbvoEZOIVWAg7e8YYg==
        -----END PUBLIC KEY-----
        """

    public static let products: [Product] = [
        Product(
            productId: "com.example.coins100", type: .consumable, creditAmount: 100, priceMicros: 990_000, currency: "USD", displayName: "100 coins"),
        Product(productId: "com.example.removeads", type: .nonConsumable, priceMicros: 2_990_000, currency: "USD", displayName: "Remove ads"),
        Product(
            productId: "com.example.pro.monthly", type: .autoRenewable, duration: "P1M", priceMicros: 4_990_000, currency: "USD",
            displayName: "Pro, monthly"),
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
                products: products,
                client: ClientAccess(
                    key: clientKey, userTokens: UserTokenPolicy(hs256Secret: userTokenSecret),
                    signingKeys: [ResponseSigningKey(id: signingKeyId, privateKeyPEM: signingPrivateKeyPEM)]),
                appAppleId: appAppleId)
        ]
        // A promotional offer for subscribers of the monthly plan, current or lapsed (signed
        // with the app's In-App Purchase key: under `serve --simulator`, the one generated).
        c.apps[0].offers = [OfferDefinition(id: "pro_comeback", productId: "com.example.pro.monthly")]
        // Pro by subscription or by the season pass; Pro also removes the ads.
        c.apps[0].entitlements = [
            EntitlementDefinition(id: "pro", products: ["com.example.pro.monthly", "com.example.season.pass"]),
            EntitlementDefinition(id: "no_ads", products: ["com.example.removeads", "com.example.pro.monthly"]),
        ]
        // The paywall shows the subscription and the season pass; the lifetime-style
        // "remove ads" is its own offering, shown first to French storefronts.
        c.apps[0].offerings = [
            Offering(
                id: "default", description: "Pro",
                packages: [
                    OfferingPackage(id: "$monthly", productId: "com.example.pro.monthly"),
                    OfferingPackage(id: "season", productId: "com.example.season.pass"),
                ], metadata: .object(["title": .string("Go Pro")])),
            Offering(
                id: "no_ads", description: "Remove ads",
                packages: [
                    OfferingPackage(id: "$lifetime", productId: "com.example.removeads"),
                    OfferingPackage(id: "legacy", productId: "com.example.legacy.pack"),
                ]),
        ]
        c.apps[0].offeringTargeting = OfferingTargeting(
            current: "default", rules: [OfferingRule(id: "france", offering: "no_ads", storefronts: ["FRA"])])
        return c
    }
}
