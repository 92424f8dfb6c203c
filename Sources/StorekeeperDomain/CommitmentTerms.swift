public import Foundation

/// Where a transaction of a monthly plan with a 12-month commitment stands in its commitment:
/// the customer pays monthly but has committed to a year, so "renews next month" and "may
/// leave at `expiresDate`" are different dates.
public struct CommitmentTerms: Codable, Hashable, Sendable {
    /// Which monthly payment of the commitment this is (1 for the first).
    public var billingPeriodNumber: Int?
    public var totalBillingPeriods: Int?
    /// When the commitment ends (the customer's next chance to leave).
    public var expiresDate: Date?

    public init(billingPeriodNumber: Int?, totalBillingPeriods: Int?, expiresDate: Date?) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.expiresDate = expiresDate
    }
}
