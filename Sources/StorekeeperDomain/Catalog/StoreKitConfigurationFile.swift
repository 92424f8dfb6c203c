public import Foundation

/// The catalog as an Xcode StoreKit configuration file (`Products.storekit`), so a team tests
/// in Xcode against the products, prices, subscription groups and promotional offers the server
/// sells. The shape is the one Xcode 16 and later write (format 4.0: `products`,
/// `nonRenewingSubscriptions`, `subscriptionGroups` with `groupNumber` levels, `adHocOffers`,
/// `settings`, `version`), read from Xcode-written files; Apple publishes no schema. Only
/// Ready-for-Sale products are written. Ids (`identifier`, `internalID`, a group's `id`) are
/// eight hex digits derived from the names they stand for, so two exports of one catalog are
/// byte for byte the same and a diff shows only what changed.
public enum StoreKitConfigurationFile {
    /// The format version written.
    public static let version = Version(major: 4, minor: 0)
    /// The periods StoreKit renews subscriptions by.
    public static let recurringPeriods: Set<String> = ["P1W", "P1M", "P2M", "P3M", "P6M", "P1Y"]

    public struct Version: Codable, Hashable, Sendable {
        public var major: Int
        public var minor: Int
    }

    public struct Localization: Codable, Hashable, Sendable {
        public var description: String
        public var displayName: String
        public var locale: String
    }

    /// A consumable, non-consumable or non-renewing subscription.
    public struct Item: Codable, Hashable, Sendable {
        public var displayPrice: String
        public var familyShareable: Bool
        public var internalID: String
        public var localizations: [Localization]
        public var productID: String
        public var referenceName: String
        public var type: String
    }

    /// A promotional offer (`adHocOffers`).
    public struct Offer: Codable, Hashable, Sendable {
        public var internalID: String
        public var numberOfPeriods: Int
        public var offerID: String
        public var paymentMode: String
        public var referenceName: String
        public var subscriptionPeriod: String
    }

    public struct Subscription: Codable, Hashable, Sendable {
        public var adHocOffers: [Offer]
        public var codeOffers: [Offer]
        public var displayPrice: String
        public var familyShareable: Bool
        public var groupNumber: Int
        public var internalID: String
        /// Always written, null when there is none (as Xcode writes it).
        public var introductoryOffer: Offer?
        public var localizations: [Localization]
        public var productID: String
        public var recurringSubscriptionPeriod: String
        public var referenceName: String
        public var subscriptionGroupID: String
        public var type: String
        public var winbackOffers: [Offer]

        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(adHocOffers, forKey: .adHocOffers)
            try c.encode(codeOffers, forKey: .codeOffers)
            try c.encode(displayPrice, forKey: .displayPrice)
            try c.encode(familyShareable, forKey: .familyShareable)
            try c.encode(groupNumber, forKey: .groupNumber)
            try c.encode(internalID, forKey: .internalID)
            try c.encode(introductoryOffer, forKey: .introductoryOffer)
            try c.encode(localizations, forKey: .localizations)
            try c.encode(productID, forKey: .productID)
            try c.encode(recurringSubscriptionPeriod, forKey: .recurringSubscriptionPeriod)
            try c.encode(referenceName, forKey: .referenceName)
            try c.encode(subscriptionGroupID, forKey: .subscriptionGroupID)
            try c.encode(type, forKey: .type)
            try c.encode(winbackOffers, forKey: .winbackOffers)
        }
    }

    public struct Group: Codable, Hashable, Sendable {
        public var id: String
        public var localizations: [Localization]
        public var name: String
        public var subscriptions: [Subscription]
    }

    public struct Policies: Codable, Hashable, Sendable {
        public var eula: String
        public var policies: [Localization]
    }

    public struct Settings: Codable, Hashable, Sendable {
        public var _failTransactionsEnabled: Bool
        public var _locale: String
        public var _storefront: String
        public var _storeKitErrors: [String]
    }

    public struct Contents: Codable, Hashable, Sendable {
        public var appPolicies: Policies
        public var identifier: String
        public var nonRenewingSubscriptions: [Item]
        public var products: [Item]
        public var settings: Settings
        public var subscriptionGroups: [Group]
        public var version: Version
    }

    /// The file's contents for an app's catalog. `groups`: subscription group name → its
    /// products, highest service level first (`groupNumber` 1); an auto-renewable subscription
    /// in no group gets a group of its own, named after it. An auto-renewable subscription
    /// without a period StoreKit renews by is left out (Xcode needs one). Promotional offers are
    /// written with the terms the server does not know filled in as one free period of the
    /// subscription's own length (edit them in Xcode); win-back offers are not written.
    public static func contents(appId: String, products: [Product], groups: [String: [String]], offers: [OfferDefinition]) -> Contents {
        let selling = products.filter { $0.status == .readyForSale }.sorted { $0.productId < $1.productId }
        func item(_ product: Product, _ type: String) -> Item {
            Item(
                displayPrice: displayPrice(product), familyShareable: false, internalID: hexId("product:\(product.productId)"),
                localizations: localizations(product), productID: product.productId, referenceName: product.displayName ?? product.productId,
                type: type)
        }
        var groupOf: [String: (name: String, level: Int)] = [:]
        for (name, ids) in groups.sorted(by: { $0.key < $1.key }) {
            for (index, id) in ids.enumerated() where groupOf[id] == nil { groupOf[id] = (name, index + 1) }
        }
        var subscriptions: [String: [Subscription]] = [:]
        for product in selling where product.type == .autoRenewable {
            guard let period = product.duration, recurringPeriods.contains(period) else { continue }
            let group = groupOf[product.productId] ?? (product.productId, 1)
            let adHoc = offers.filter { $0.productId == product.productId && $0.kind == .promotional }.sorted { $0.id < $1.id }.map {
                Offer(
                    internalID: hexId("offer:\(product.productId):\($0.id)"), numberOfPeriods: 1, offerID: $0.id, paymentMode: "free",
                    referenceName: $0.id, subscriptionPeriod: period)
            }
            subscriptions[group.name, default: []].append(
                Subscription(
                    adHocOffers: adHoc, codeOffers: [], displayPrice: displayPrice(product), familyShareable: false, groupNumber: group.level,
                    internalID: hexId("product:\(product.productId)"), introductoryOffer: nil, localizations: localizations(product),
                    productID: product.productId, recurringSubscriptionPeriod: period, referenceName: product.displayName ?? product.productId,
                    subscriptionGroupID: hexId("group:\(group.name)"), type: "RecurringSubscription", winbackOffers: []))
        }
        return Contents(
            appPolicies: Policies(eula: "", policies: []), identifier: hexId("app:\(appId)"),
            nonRenewingSubscriptions: selling.filter { $0.type == .nonRenewing }.map { item($0, "NonRenewingSubscription") },
            products: selling.compactMap { product in
                switch product.type {
                case .consumable: item(product, "Consumable")
                case .nonConsumable: item(product, "NonConsumable")
                default: nil
                }
            },
            settings: Settings(_failTransactionsEnabled: false, _locale: "en_US", _storefront: "USA", _storeKitErrors: []),
            subscriptionGroups: subscriptions.keys.sorted().map { name in
                Group(
                    id: hexId("group:\(name)"), localizations: [], name: name,
                    subscriptions: (subscriptions[name] ?? []).sorted { ($0.groupNumber, $0.productID) < ($1.groupNumber, $1.productID) })
            },
            version: version)
    }

    /// The file's bytes: sorted keys, pretty-printed, as Xcode writes it.
    public static func encode(_ contents: Contents) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(contents) + Data("\n".utf8)
    }

    /// The reference price as StoreKit shows it: a decimal string with two decimals and no
    /// symbol (`0.99`, `29.00`), from exact micro-units; `0.00` when the catalog has none.
    static func displayPrice(_ product: Product) -> String {
        let cents = ((product.priceMicros ?? 0) + 5_000) / 10_000
        let fraction = String(cents % 100)
        return "\(cents / 100)." + String(repeating: "0", count: 2 - fraction.count) + fraction
    }

    static func localizations(_ product: Product) -> [Localization] {
        [Localization(description: "", displayName: product.displayName ?? product.productId, locale: "en_US")]
    }

    /// Eight upper-case hex digits of FNV-1a over `name`: stable across exports.
    static func hexId(_ name: String) -> String {
        var hash: UInt32 = 2_166_136_261
        for byte in name.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        let text = String(hash, radix: 16, uppercase: true)
        return String(repeating: "0", count: 8 - text.count) + text
    }
}
