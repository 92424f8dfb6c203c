import Foundation
import StorekeeperDomain
import Testing

/// The catalog as Xcode's StoreKit configuration file, read back as Xcode would: the keys of
/// format 4.0 on every entry, each product where its type goes, prices as decimal strings,
/// groups and levels, offers on their subscription, and the same bytes on every export.
@Suite("StoreKit configuration file")
struct StoreKitConfigurationFileTests {
    static let products = [
        Product(productId: "coins.100", type: .consumable, priceMicros: 990_000, currency: "USD", displayName: "100 Coins"),
        Product(productId: "remove.ads", type: .nonConsumable, priceMicros: 2_990_000, currency: "USD"),
        Product(productId: "season.pass", type: .nonRenewing, duration: "P3M", priceMicros: 14_990_000),
        Product(productId: "pro.monthly", type: .autoRenewable, duration: "P1M", priceMicros: 4_990_000, displayName: "Pro"),
        Product(productId: "pro.yearly", type: .autoRenewable, duration: "P1Y", priceMicros: 39_990_000),
        Product(productId: "plus.weekly", type: .autoRenewable, duration: "P1W", priceMicros: 1_000_000),
        Product(productId: "odd.period", type: .autoRenewable, duration: "P5D", priceMicros: 1_000_000),
        Product(productId: "retired", type: .nonConsumable, status: ProductStatus(rawValue: "removed_from_sale"), priceMicros: 990_000),
        Product(productId: "free.tier", type: .freeSubscription),
    ]
    static let offers = [
        OfferDefinition(id: "comeback", productId: "pro.monthly"), OfferDefinition(id: "winback", productId: "pro.monthly", kind: .winBack),
    ]

    static func readBack() throws -> [String: Any] {
        let file = StoreKitConfigurationFile.contents(
            appId: "demo", products: products, groups: ["Pro": ["pro.yearly", "pro.monthly"]], offers: offers)
        let data = try StoreKitConfigurationFile.encode(file)
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("every entry has the keys Xcode writes; each product is where its type goes; only what is for sale")
    func shape() throws {
        let file = try Self.readBack()
        #expect(
            Set(file.keys) == ["appPolicies", "identifier", "nonRenewingSubscriptions", "products", "settings", "subscriptionGroups", "version"])
        #expect(file["version"] as? [String: Int] == ["major": 4, "minor": 0])
        let itemKeys: Set<String> = ["displayPrice", "familyShareable", "internalID", "localizations", "productID", "referenceName", "type"]
        let products = try #require(file["products"] as? [[String: Any]])
        #expect(products.allSatisfy { Set($0.keys) == itemKeys })
        #expect(
            products.map { "\($0["productID"]!) \($0["type"]!) \($0["displayPrice"]!)" } == [
                "coins.100 Consumable 0.99", "remove.ads NonConsumable 2.99",
            ])
        #expect((products[0]["localizations"] as? [[String: String]]) == [["description": "", "displayName": "100 Coins", "locale": "en_US"]])
        let nonRenewing = try #require(file["nonRenewingSubscriptions"] as? [[String: Any]])
        #expect(nonRenewing.map { "\($0["productID"]!) \($0["type"]!) \($0["displayPrice"]!)" } == ["season.pass NonRenewingSubscription 14.99"])

        let groups = try #require(file["subscriptionGroups"] as? [[String: Any]])
        #expect(groups.compactMap { $0["name"] as? String } == ["Pro", "plus.weekly"], "a subscription in no group gets its own")
        let pro = try #require(groups.first?["subscriptions"] as? [[String: Any]])
        let subscriptionKeys: Set<String> = [
            "adHocOffers", "codeOffers", "displayPrice", "familyShareable", "groupNumber", "internalID", "introductoryOffer", "localizations",
            "productID", "recurringSubscriptionPeriod", "referenceName", "subscriptionGroupID", "type", "winbackOffers",
        ]
        #expect(pro.allSatisfy { Set($0.keys) == subscriptionKeys && $0["type"] as? String == "RecurringSubscription" })
        #expect(pro.allSatisfy { $0["subscriptionGroupID"] as? String == groups[0]["id"] as? String && $0["introductoryOffer"] is NSNull })
        #expect(
            pro.map { "\($0["productID"]!) \($0["groupNumber"]!) \($0["recurringSubscriptionPeriod"]!) \($0["displayPrice"]!)" } == [
                "pro.yearly 1 P1Y 39.99", "pro.monthly 2 P1M 4.99",
            ])
        let offers = try #require(pro[1]["adHocOffers"] as? [[String: Any]])
        #expect(offers.count == 1 && offers[0]["offerID"] as? String == "comeback" && offers[0]["paymentMode"] as? String == "free")
        #expect(offers[0]["subscriptionPeriod"] as? String == "P1M" && (pro[1]["winbackOffers"] as? [Any])?.isEmpty == true)
        // Not written: a period StoreKit cannot renew by, a product off sale, a free subscription.
        let written = try JSONSerialization.data(withJSONObject: file)
        for absent in ["odd.period", "retired", "free.tier"] { #expect(!String(decoding: written, as: UTF8.self).contains(absent)) }
    }

    @Test("ids are eight hex digits, unique, and the same on every export: two exports are the same bytes")
    func stableIds() throws {
        let file = StoreKitConfigurationFile.contents(
            appId: "demo", products: Self.products, groups: ["Pro": ["pro.yearly", "pro.monthly"]], offers: Self.offers)
        let again = StoreKitConfigurationFile.contents(
            appId: "demo", products: Self.products.reversed(), groups: ["Pro": ["pro.yearly", "pro.monthly"]], offers: Self.offers.reversed())
        #expect(try StoreKitConfigurationFile.encode(file) == StoreKitConfigurationFile.encode(again))
        var ids = [file.identifier] + file.products.map(\.internalID) + file.nonRenewingSubscriptions.map(\.internalID)
        for group in file.subscriptionGroups {
            ids.append(group.id)
            for subscription in group.subscriptions { ids += [subscription.internalID] + subscription.adHocOffers.map(\.internalID) }
        }
        #expect(Set(ids).count == ids.count && ids.count == 10, "\(ids)")
        #expect(ids.allSatisfy { $0.count == 8 && $0.allSatisfy { "0123456789ABCDEF".contains($0) } })
    }
}
