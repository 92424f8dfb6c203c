/// How an app answers Apple's CONSUMPTION_REQUEST (a customer asked Apple for a refund): with
/// what Storekeeper knows of the purchase, and the refund the developer would prefer, by a
/// policy set per app (docs/REFUNDS.md). Apple decides; the answer only informs it.
public struct RefundPolicy: Codable, Hashable, Sendable {
    public enum Mode: String, Codable, Sendable, CaseIterable {
        /// Nothing is sent; the request is recorded.
        case off
        /// Consumption information without a preference.
        case dataOnly = "data_only"
        /// Every answer prefers a full refund.
        case preferGrant = "prefer_grant"
        /// Every answer prefers no refund.
        case preferDecline = "prefer_decline"
        /// The first rule that matches names the preference (`RefundAnswerRule`); none: no preference.
        case rules
    }

    public var mode: Mode = .off
    /// The customers agreed (in the app's terms, say) that their consumption information may be
    /// sent to Apple. Apple takes it only with `customerConsented: true`; without it nothing is
    /// sent, whatever the mode.
    public var customersConsented: Bool = false
    /// Rules: decline a consumable whose credits the customer spent, in part or whole.
    public var declineWhenCreditsSpent: Bool = true
    /// Rules: grant a purchase made at most this many hours before the request.
    public var grantWithinHours: Int? = nil
    /// Rules: grant purchases made in these storefronts (ISO 3166-1 alpha-3, `FRA`).
    public var grantStorefronts: [String] = []
    /// Whether the app gives a free sample or trial of the purchase (Apple's `sampleContentProvided`).
    public var sampleContentProvided: Bool = false

    public init(
        mode: Mode = .off, customersConsented: Bool = false, declineWhenCreditsSpent: Bool = true, grantWithinHours: Int? = nil,
        grantStorefronts: [String] = [], sampleContentProvided: Bool = false
    ) {
        self.mode = mode
        self.customersConsented = customersConsented
        self.declineWhenCreditsSpent = declineWhenCreditsSpent
        self.grantWithinHours = grantWithinHours
        self.grantStorefronts = grantStorefronts
        self.sampleContentProvided = sampleContentProvided
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case mode, customersConsented, declineWhenCreditsSpent, grantWithinHours, grantStorefronts, sampleContentProvided
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        mode = try c.decodeIfPresent(Mode.self, forKey: .mode) ?? .off
        customersConsented = try c.decodeIfPresent(Bool.self, forKey: .customersConsented) ?? false
        declineWhenCreditsSpent = try c.decodeIfPresent(Bool.self, forKey: .declineWhenCreditsSpent) ?? true
        grantWithinHours = try c.decodeIfPresent(Int.self, forKey: .grantWithinHours)
        grantStorefronts = try c.decodeIfPresent([String].self, forKey: .grantStorefronts) ?? []
        sampleContentProvided = try c.decodeIfPresent(Bool.self, forKey: .sampleContentProvided) ?? false
    }

    /// Problems with this policy, each naming its key under `prefix`.
    public func problems(prefix: String) -> [String] {
        var problems: [String] = []
        if let hours = grantWithinHours, !(1...8_760).contains(hours) { problems.append("\(prefix).grantWithinHours: from 1 to 8760") }
        for (index, code) in grantStorefronts.enumerated()
        where code.count != 3 || !code.unicodeScalars.allSatisfy({ ("A"..."Z").contains($0) }) {
            problems.append("\(prefix).grantStorefronts[\(index)]: three upper-case letters (ISO 3166-1 alpha-3)")
        }
        if mode != .off, !customersConsented {
            problems.append(
                "\(prefix).customersConsented: must be true for mode '\(mode.rawValue)' (Apple takes consumption information only with the customer's consent)"
            )
        }
        return problems
    }
}
