import Foundation

/// A transaction of a monthly plan with a 12-month commitment: which monthly payment this is
/// and when the commitment ends. Prices in milli-units.
public struct TransactionCommitmentInfo: Codable, Hashable, Sendable {
    public var billingPeriodNumber: Int?
    public var totalBillingPeriods: Int?
    public var commitmentExpiresDate: AppleDate?
    public var commitmentPrice: Int64?

    public init(billingPeriodNumber: Int?, totalBillingPeriods: Int?, commitmentExpiresDate: AppleDate?, commitmentPrice: Int64?) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.commitmentExpiresDate = commitmentExpiresDate
        self.commitmentPrice = commitmentPrice
    }
}

/// What happens when a commitment ends: renewed into another commitment (or not), and how.
public struct RenewalCommitmentInfo: Codable, Hashable, Sendable {
    public var commitmentAutoRenewProductId: String?
    public var commitmentAutoRenewStatus: Int?
    public var commitmentRenewalBillingPlanType: String?
    public var commitmentRenewalDate: AppleDate?
    public var commitmentRenewalPrice: Int64?

    public init(
        commitmentAutoRenewProductId: String?, commitmentAutoRenewStatus: Int?, commitmentRenewalBillingPlanType: String?,
        commitmentRenewalDate: AppleDate?, commitmentRenewalPrice: Int64?
    ) {
        self.commitmentAutoRenewProductId = commitmentAutoRenewProductId
        self.commitmentAutoRenewStatus = commitmentAutoRenewStatus
        self.commitmentRenewalBillingPlanType = commitmentRenewalBillingPlanType
        self.commitmentRenewalDate = commitmentRenewalDate
        self.commitmentRenewalPrice = commitmentRenewalPrice
    }
}
