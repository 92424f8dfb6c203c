/// A promotional or win-back offer an app set up in App Store Connect for one auto-renewable
/// product, as the server knows it: the server signs only offers it knows, for the users the
/// offer's audience admits, whatever offer id a caller names.
public struct OfferDefinition: Codable, Hashable, Sendable {
    /// The offer's identifier in App Store Connect (StoreKit's `offerID`).
    public var id: String
    public var productId: String
    public var kind: Kind
    /// Who may take a promotional offer (win-back offers follow Apple's `eligibleWinBackOfferIds`).
    public var audience: Audience

    public init(id: String, productId: String, kind: Kind = .promotional, audience: Audience = .currentOrLapsed) {
        self.id = id
        self.productId = productId
        self.kind = kind
        self.audience = audience
    }

    public enum Kind: String, Codable, Hashable, Sendable {
        /// Signed by the server (V1 signature or V2 JWS) for StoreKit's purchase.
        case promotional
        /// Offered to lapsed subscribers Apple names eligible in their renewal info.
        case winBack = "win_back"
    }

    /// Apple sells promotional offers to subscribers, current or lapsed, of the product's
    /// subscription group; an app may narrow that.
    public enum Audience: String, Codable, Hashable, Sendable {
        /// Has or had a subscription in the group (Apple's rule; the default).
        case currentOrLapsed = "current_or_lapsed"
        /// Has an active subscription in the group now (an upgrade, a loyalty discount).
        case current
        /// Had one, none active now (win them back).
        case lapsed
    }

    enum CodingKeys: String, CodingKey { case id, productId, kind, audience }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        productId = try c.decode(String.self, forKey: .productId)
        kind = try c.decodeIfPresent(Kind.self, forKey: .kind) ?? .promotional
        audience = try c.decodeIfPresent(Audience.self, forKey: .audience) ?? .currentOrLapsed
    }
}
