import AppStoreModels
import Foundation
import StorekeeperDomain
import StorekeeperWire
import Testing

/// Which offering an app is told is current, and what an operator may save.
@Suite("offerings: selection by override, rule and default; Ready-for-Sale filtering; validation")
struct OfferingTests {
    let monthly = Product(productId: "pro.monthly", type: .autoRenewable)
    let annual = Product(productId: "pro.annual", type: .autoRenewable)
    let retired = Product(productId: "old.pack", type: .nonConsumable, status: .developerRemovedFromSale)

    var offerings: [Offering] {
        [
            Offering(
                id: "main",
                packages: [OfferingPackage(id: "$monthly", productId: "pro.monthly"), OfferingPackage(id: "$annual", productId: "pro.annual")]),
            Offering(
                id: "eu", packages: [OfferingPackage(id: "$annual", productId: "pro.annual"), OfferingPackage(id: "legacy", productId: "old.pack")]),
            Offering(id: "beta", packages: [OfferingPackage(id: "$monthly", productId: "pro.monthly")]),
        ]
    }

    var targeting: OfferingTargeting {
        OfferingTargeting(
            current: "main",
            rules: [
                OfferingRule(id: "new-app", offering: "beta", minAppVersion: "3.0"),
                OfferingRule(id: "europe", offering: "eu", storefronts: ["FRA", "deu"], maxAppVersion: "2.9.9"),
            ])
    }

    func select(override: String? = nil, storefront: String? = nil, version: String? = nil, sellable: [Product]? = nil) -> OfferingSelection {
        OfferingSelection.select(
            offerings: offerings, targeting: targeting, userOverride: override,
            audience: OfferingAudience(storefront: storefront.flatMap(Storefront.init), appVersion: version.flatMap(AppVersion.init)),
            sellable: sellable ?? [monthly, annual, retired].filter { $0.status == .readyForSale })
    }

    @Test("no rule matches: the default; a rule's storefront and version both must match; rules in order; an override beats them all")
    func selection() {
        #expect(select().currentOfferingId == "main" && select().selectedBy == .current && select().ruleId == nil)
        // The storefront matches, the version is unknown: a stated bound is not met by silence.
        #expect(select(storefront: "FRA").currentOfferingId == "main")
        let europe = select(storefront: "fra", version: "2.1")
        #expect(europe.currentOfferingId == "eu" && europe.selectedBy == .rule && europe.ruleId == "europe")
        #expect(select(storefront: "DEU", version: "2.9.9.0").currentOfferingId == "eu")
        #expect(select(storefront: "DEU", version: "2.10").currentOfferingId == "main", "2.10 is above 2.9.9")
        #expect(select(storefront: "USA", version: "2.1").currentOfferingId == "main")
        // Both rules match a French 3.0: the first listed wins.
        #expect(select(storefront: "FRA", version: "3").ruleId == "new-app")
        let overridden = select(override: "eu", storefront: "FRA", version: "3.0")
        #expect(overridden.currentOfferingId == "eu" && overridden.selectedBy == .userOverride)
    }

    @Test("an override or rule naming a deleted offering falls through; no default: none")
    func fallThrough() {
        var target = targeting
        target.current = nil
        let selection = OfferingSelection.select(
            offerings: offerings.filter { $0.id != "beta" }, targeting: target, userOverride: "gone",
            audience: OfferingAudience(appVersion: AppVersion("4.0")), sellable: [monthly])
        #expect(selection.currentOfferingId == nil && selection.selectedBy == .none)
    }

    @Test("only Ready-for-Sale products' packages are shown, in the operator's order, each with its catalog product; offerings by id")
    func sellableOnly() throws {
        let selection = select()
        #expect(selection.offerings.map(\.id) == ["beta", "eu", "main"])
        let eu = try #require(selection.offerings.first { $0.id == "eu" })
        #expect(eu.packages.map(\.id) == ["$annual"] && eu.packages.first?.product == annual)
        #expect(selection.offerings.first { $0.id == "main" }?.packages.map(\.productId) == ["pro.monthly", "pro.annual"])
        // Nothing sellable: the offerings remain, empty, so a paywall can say so.
        #expect(select(sellable: []).offerings.allSatisfy { $0.packages.isEmpty })
    }

    @Test("app versions compare number by number, trailing zeros equal; malformed ones refused")
    func versions() throws {
        let newer = try #require(AppVersion("2.10"))
        #expect(try newer > #require(AppVersion("2.9.9")))
        #expect(AppVersion("2.1") == AppVersion("2.1.0.0"))
        for bad in ["", "1.", ".1", "1..2", "1.2.3.4.5", "v1", "1.-2", "1234567890", "1.2 "] { #expect(AppVersion(bad) == nil, "\(bad)") }
        #expect(Storefront("usa")?.code == "USA" && Storefront("US") == nil && Storefront("ÜSA") == nil)
    }

    @Test("an invalid offering or targeting names every problem and its place")
    func validation() {
        let bad = Offering(
            id: "no spaces", description: String(repeating: "x", count: 501),
            packages: [
                OfferingPackage(id: "$yearly", productId: "a"), OfferingPackage(id: "custom", productId: ""),
                OfferingPackage(id: "custom", productId: "a"),
            ], metadata: .array([]))
        let problems = bad.problems()
        for expected in [
            "id:", "description:", "packages[0].id: '$' starts only", "packages[1].productId: 1-255", "packages[2].id: duplicate",
            "packages[2].productId: 'a' is in another package", "metadata: a JSON object",
        ] {
            #expect(problems.contains { $0.hasPrefix(expected) }, "\(expected) in \(problems)")
        }
        #expect(Offering(id: "x", packages: []).problems() == ["packages: 1-50 packages"])
        let big = Offering(
            id: "x", packages: [OfferingPackage(id: "$monthly", productId: "p")],
            metadata: .object(["t": .string(String(repeating: "a", count: 5000))]))
        #expect(big.problems() == ["metadata: at most 4096 bytes encoded"])
        #expect(Offering.problems([offerings[0], offerings[0]], prefix: "offerings") == ["offerings[1].id: duplicate 'main'"])

        let targeting = OfferingTargeting(
            current: "gone",
            rules: [
                OfferingRule(id: "all", offering: "main"), OfferingRule(id: "r", offering: "nope", storefronts: ["US"]),
                OfferingRule(id: "r", offering: "main", minAppVersion: "3", maxAppVersion: "2.0"),
            ])
        let found = targeting.problems(offerings: ["main"], prefix: "t")
        for expected in [
            "t.current: no offering 'gone'", "t.rules[0]: names storefronts", "t.rules[1].storefronts:", "t.rules[1].offering: no offering 'nope'",
            "t.rules[2].maxAppVersion: below", "t.rules[2].id: duplicate",
        ] {
            #expect(found.contains { $0.hasPrefix(expected) }, "\(expected) in \(found)")
        }
        #expect(self.targeting.problems(offerings: ["main", "eu", "beta"]).isEmpty)
    }
}
