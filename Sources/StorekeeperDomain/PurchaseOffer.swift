/// The offer a purchase was bought with, as Apple signed it (`offerType`, `offerIdentifier`,
/// `offerDiscountType`, `offerPeriod`), or as a receipt tells it (`is_trial_period`,
/// `is_in_intro_offer_period`, `promotional_offer_id`, `offer_code_ref_name`). Kept as sent:
/// values Apple adds later pass through.
public struct PurchaseOffer: Codable, Hashable, Sendable {
    /// Apple's `offerType`: 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var type: Int
    /// The promotional offer's or offer code's identifier (none for introductory offers).
    public var identifier: String?
    /// `FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`, … (nil where the receipt does not say).
    public var discountType: String?
    /// The offer's length, an ISO 8601 duration (`P1M`), when Apple gives it.
    public var period: String?

    public init(type: Int, identifier: String? = nil, discountType: String? = nil, period: String? = nil) {
        self.type = type
        self.identifier = identifier
        self.discountType = discountType
        self.period = period
    }

    public static let introductory = 1
    public static let promotional = 2
    public static let offerCode = 3
    public static let winBack = 4
    public static let freeTrial = "FREE_TRIAL"
}
