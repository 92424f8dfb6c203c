/// What Apple charged for one item of a purchase, as its signed transaction says: `price` in
/// thousandths of the currency's unit (`12990` is 12.99), and the ISO 4217 `currency`. It is the
/// price of the product, or of the offer it was bought with (0 for a free trial), in the
/// customer's storefront; a purchase of several items was charged `quantity` times it. Absent
/// from receipts (verifyReceipt never says what was charged).
public struct ChargedPrice: Codable, Hashable, Sendable {
    public var milliunits: Int64
    public var currency: String

    public init(milliunits: Int64, currency: String) {
        self.milliunits = milliunits
        self.currency = currency
    }

    /// The same amount in millionths of the unit, the ledger's scale; nil where it would not
    /// fit (no price is that large: the amount is then unknown, never a trap).
    public var micros: Int64? {
        let (value, overflow) = milliunits.multipliedReportingOverflow(by: 1_000)
        return overflow ? nil : value
    }
}
