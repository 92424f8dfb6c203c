import AppStoreModels
public import StorekeeperWire

/// The offerings an app is shown and which one is current for this caller (docs/OFFERINGS.md):
/// a user's override, else the first rule that matches, else the default. An override or rule
/// naming an offering deleted since falls through to the next choice.
public struct OfferingSelection: Codable, Hashable, Sendable {
    public enum Reason: String, Codable, Hashable, Sendable {
        case userOverride = "user_override"
        case experiment
        case rule
        case current
        case none
    }

    public var currentOfferingId: String?
    public var selectedBy: Reason
    /// The rule that chose, when one did.
    public var ruleId: String?
    /// The customer's arm, when an experiment chose.
    public var experiment: ExperimentEnrollment?
    /// Every offering, each with only its sellable packages (each with its catalog product),
    /// by id.
    public var offerings: [ShownOffering]

    public init(currentOfferingId: String?, selectedBy: Reason, ruleId: String?, offerings: [ShownOffering]) {
        self.currentOfferingId = currentOfferingId
        self.selectedBy = selectedBy
        self.ruleId = ruleId
        self.offerings = offerings
    }

    /// `enrollment`: the customer's arm in the experiment that shows now (docs/EXPERIMENTS.md),
    /// after a user's override (a tester sees what they were set to) and before the rules.
    public static func select(
        offerings: [Offering], targeting: OfferingTargeting, userOverride: String?, enrollment: ExperimentEnrollment? = nil,
        audience: OfferingAudience, sellable: [Product]
    ) -> OfferingSelection {
        let products = Dictionary(sellable.map { ($0.productId, $0) }, uniquingKeysWith: { first, _ in first })
        let shown = offerings.sorted { $0.id < $1.id }.map { offering in
            ShownOffering(
                id: offering.id, description: offering.description,
                packages: offering.packages.compactMap { package in
                    products[package.productId].map { ShownOffering.Package(id: package.id, productId: package.productId, product: $0) }
                }, metadata: offering.metadata)
        }
        let ids = Set(shown.map(\.id))
        if let userOverride, ids.contains(userOverride) {
            return OfferingSelection(currentOfferingId: userOverride, selectedBy: .userOverride, ruleId: nil, offerings: shown)
        }
        if let enrollment, ids.contains(enrollment.offering) {
            var selection = OfferingSelection(currentOfferingId: enrollment.offering, selectedBy: .experiment, ruleId: nil, offerings: shown)
            selection.experiment = enrollment
            return selection
        }
        if let rule = targeting.rules.first(where: { ids.contains($0.offering) && $0.matches(audience) }) {
            return OfferingSelection(currentOfferingId: rule.offering, selectedBy: .rule, ruleId: rule.id, offerings: shown)
        }
        if let current = targeting.current, ids.contains(current) {
            return OfferingSelection(currentOfferingId: current, selectedBy: .current, ruleId: nil, offerings: shown)
        }
        return OfferingSelection(currentOfferingId: nil, selectedBy: .none, ruleId: nil, offerings: shown)
    }
}

/// An offering as an app sees it: only packages it may sell, each with the catalog's product.
public struct ShownOffering: Codable, Hashable, Sendable {
    public struct Package: Codable, Hashable, Sendable {
        public var id: String
        public var productId: String
        public var product: Product
    }

    public var id: String
    public var description: String?
    public var packages: [Package]
    public var metadata: JSONValue?
}
