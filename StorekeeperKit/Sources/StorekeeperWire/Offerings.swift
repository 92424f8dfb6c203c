import Foundation

/// What the paywall is shown (`GET /v1/offerings`): every offering with its sellable packages,
/// and which one is current for this user and why.
public struct OfferingsAnswer: WireMessage {
    public static let location = WireLocation.schema("OfferingSelection")

    /// An offering as shown: only the packages whose product may be sold, each with it.
    public struct Offering: Codable, Sendable, Hashable {
        public struct Package: Codable, Sendable, Hashable {
            /// `$monthly`, `$annual`, … or the app's own id.
            public var id: String
            public var productId: String
            public var product: CatalogProduct

            public init(id: String, productId: String, product: CatalogProduct) {
                self.id = id
                self.productId = productId
                self.product = product
            }
        }

        public var id: String
        public var description: String?
        public var packages: [Package]
        /// Free-form JSON for the paywall.
        public var metadata: [String: JSONValue]?

        public init(id: String, description: String?, packages: [Package], metadata: [String: JSONValue]?) {
            self.id = id
            self.description = description
            self.packages = packages
            self.metadata = metadata
        }
    }

    /// The user's arm in an experiment on offerings, when one chose the current offering: a
    /// backend joins its own data on it.
    public struct ExperimentArm: Codable, Sendable, Hashable {
        public var experimentId: String
        /// The arm's position in the experiment, from 0.
        public var arm: Int
        public var offeringId: String
        public var enrolledAt: Date

        public init(experimentId: String, arm: Int, offeringId: String, enrolledAt: Date) {
            self.experimentId = experimentId
            self.arm = arm
            self.offeringId = offeringId
            self.enrolledAt = enrolledAt
        }
    }

    public var currentOfferingId: String?
    /// `user_override`, `experiment`, `rule`, `current` or `none` (open).
    public var selectedBy: String
    /// The rule that chose, when one did.
    public var ruleId: String?
    /// The experiment's arm, when one chose.
    public var experiment: ExperimentArm?
    public var offerings: [Offering]

    public init(currentOfferingId: String?, selectedBy: String, ruleId: String?, experiment: ExperimentArm? = nil, offerings: [Offering]) {
        self.currentOfferingId = currentOfferingId
        self.selectedBy = selectedBy
        self.ruleId = ruleId
        self.experiment = experiment
        self.offerings = offerings
    }
}
