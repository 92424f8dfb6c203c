/// One ledger entry's money as the reports add it: its currency, the price charged (refunds
/// negative) and the proceeds.
public struct LedgerAmount: Sendable, Hashable {
    public var currency: String
    public var gross: Int64
    public var proceeds: Int64

    /// The entry's own amounts; nil without a price or currency, or beyond the metrics' bound
    /// (an absurd amount is left out, so no sum overflows).
    public init?(_ entry: LedgerEntry) {
        guard let currency = entry.currency, let price = entry.priceMicros, abs(price) <= MetricContribution.largestAmount,
            abs(entry.proceedsMicros ?? 0) <= MetricContribution.largestAmount
        else { return nil }
        (self.currency, gross, proceeds) = (currency, price, entry.proceedsMicros ?? 0)
    }

    public init(currency: String, gross: Int64, proceeds: Int64) {
        (self.currency, self.gross, self.proceeds) = (currency, gross, proceeds)
    }

    /// In `reporting`'s currency at the rate of the entry's purchase month; nil when the
    /// operator gave no rate for it.
    public func converted(_ reporting: ReportingCurrency, purchasedAt month: String) -> LedgerAmount? {
        guard let gross = reporting.convert(gross, from: currency, month: month),
            let proceeds = reporting.convert(proceeds, from: currency, month: month)
        else { return nil }
        return LedgerAmount(currency: reporting.currency, gross: gross, proceeds: proceeds)
    }
}
