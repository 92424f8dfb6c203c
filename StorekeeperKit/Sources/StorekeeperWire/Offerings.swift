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
        public var metadata: [String: JSONMetadata]?

        public init(id: String, description: String?, packages: [Package], metadata: [String: JSONMetadata]?) {
            self.id = id
            self.description = description
            self.packages = packages
            self.metadata = metadata
        }
    }

    public var currentOfferingId: String?
    /// `user_override`, `rule`, `current` or `none` (open).
    public var selectedBy: String
    /// The rule that chose, when one did.
    public var ruleId: String?
    public var offerings: [Offering]

    public init(currentOfferingId: String?, selectedBy: String, ruleId: String?, offerings: [Offering]) {
        self.currentOfferingId = currentOfferingId
        self.selectedBy = selectedBy
        self.ruleId = ruleId
        self.offerings = offerings
    }
}

/// A JSON value from an offering's metadata.
public enum JSONMetadata: Codable, Sendable, Hashable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONMetadata])
    case object([String: JSONMetadata])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONMetadata].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONMetadata].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public var string: String? { if case .string(let value) = self { value } else { nil } }
}
