import Foundation
public import StorekeeperWire

/// What the paywall shows, as the server decided it (docs/OFFERINGS.md), each package joined to
/// the store's product so the paywall can show its localized name and price.
public struct Offerings: Sendable, Hashable {
    /// The offering to show now; nil when the server names none.
    public var current: Offering?
    /// Every offering, by id.
    public var all: [String: Offering]
    /// Why `current` was chosen.
    public var selectedBy: Selection

    public enum Selection: Sendable, Hashable {
        case userOverride
        /// The user's arm in an experiment on offerings (docs/EXPERIMENTS.md): `arm` counts from
        /// 0 in the experiment's order, so an app can log it beside its own analytics.
        case experiment(id: String, arm: Int)
        case rule(id: String?)
        case current
        case none
        /// A reason a newer server gives that this SDK does not know.
        case other(String)
    }

    public init(current: Offering?, all: [String: Offering], selectedBy: Selection) {
        self.current = current
        self.all = all
        self.selectedBy = selectedBy
    }

    public subscript(id: String) -> Offering? { all[id] }
}

/// One offering: its packages in the order the paywall lists them.
public struct Offering: Sendable, Hashable, Identifiable {
    public var id: String
    public var description: String?
    public var packages: [Package]
    /// The offering's free-form metadata, as the operator wrote it (JSON).
    public var metadata: [String: JSONMetadata]

    public init(id: String, description: String?, packages: [Package], metadata: [String: JSONMetadata] = [:]) {
        self.id = id
        self.description = description
        self.packages = packages
        self.metadata = metadata
    }

    /// The package of a role (`$monthly`) or custom id.
    public func package(_ id: String) -> Package? { packages.first { $0.id == id } }
    public var monthly: Package? { package(PackageType.monthly.identifier) }
    public var annual: Package? { package(PackageType.annual.identifier) }
    public var lifetime: Package? { package(PackageType.lifetime.identifier) }
}

/// A product under a role the app knows, with what the store says about it.
public struct Package: Sendable, Hashable, Identifiable {
    public var id: String
    public var type: PackageType
    public var productId: String
    public var storeProduct: StoreProduct

    public init(id: String, productId: String, storeProduct: StoreProduct) {
        self.id = id
        self.type = PackageType(identifier: id)
        self.productId = productId
        self.storeProduct = storeProduct
    }
}

public enum PackageType: Sendable, Hashable {
    case weekly, monthly, twoMonth, threeMonth, sixMonth, annual, lifetime
    /// The app's own identifier.
    case custom(String)

    public init(identifier: String) {
        self =
            switch identifier {
            case "$weekly": .weekly
            case "$monthly": .monthly
            case "$two_month": .twoMonth
            case "$three_month": .threeMonth
            case "$six_month": .sixMonth
            case "$annual": .annual
            case "$lifetime": .lifetime
            default: .custom(identifier)
            }
    }

    public var identifier: String {
        switch self {
        case .weekly: "$weekly"
        case .monthly: "$monthly"
        case .twoMonth: "$two_month"
        case .threeMonth: "$three_month"
        case .sixMonth: "$six_month"
        case .annual: "$annual"
        case .lifetime: "$lifetime"
        case .custom(let id): id
        }
    }
}

/// A product as the store presents it to this user: localized, in their currency.
public struct StoreProduct: Sendable, Hashable {
    public var id: String
    public var displayName: String
    /// Formatted for the user's storefront (`4,99 €`).
    public var displayPrice: String
    /// Exact, in `currencyCode`.
    public var price: Decimal
    public var currencyCode: String?

    public init(id: String, displayName: String, displayPrice: String, price: Decimal, currencyCode: String?) {
        self.id = id
        self.displayName = displayName
        self.displayPrice = displayPrice
        self.price = price
        self.currencyCode = currencyCode
    }
}

/// A JSON value from an offering's metadata (the wire type).
public typealias JSONMetadata = StorekeeperWire.JSONValue

extension Offerings {
    /// The answer joined to the store's products: a package whose product the store does not
    /// sell to this user (not in `products`) is left out, since it could not be bought.
    init(_ wire: OfferingsAnswer, products: [StoreProduct]) {
        let byId = Dictionary(products.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var all: [String: Offering] = [:]
        for offering in wire.offerings {
            all[offering.id] = Offering(
                id: offering.id, description: offering.description,
                packages: offering.packages.compactMap { package in
                    byId[package.productId].map { Package(id: package.id, productId: package.productId, storeProduct: $0) }
                }, metadata: offering.metadata ?? [:])
        }
        let selection: Selection =
            switch wire.selectedBy {
            case "user_override": .userOverride
            case "experiment": wire.experiment.map { .experiment(id: $0.experimentId, arm: $0.arm) } ?? .other(wire.selectedBy)
            case "rule": .rule(id: wire.ruleId)
            case "current": .current
            case "none": .none
            default: .other(wire.selectedBy)
            }
        self.init(current: wire.currentOfferingId.flatMap { all[$0] }, all: all, selectedBy: selection)
    }
}
