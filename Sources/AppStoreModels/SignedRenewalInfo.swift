import Foundation
public import StorekeeperWire

/// Renewal information of an auto-renewable subscription (`JWSRenewalInfoDecodedPayload`).
public struct SignedRenewalInfo: Codable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var productId: String?
    public var autoRenewProductId: String?
    public var autoRenewStatus: Int?
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: AppleDate?
    public var priceIncreaseStatus: Int?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var signedDate: AppleDate?
    public var environment: AppStoreEnvironment?
    public var recentSubscriptionStartDate: AppleDate?
    public var renewalDate: AppleDate?
    public var renewalPrice: Int64?
    public var currency: String?
    public var appAccountToken: String?
    /// How the next renewal is billed: `BILLED_UPFRONT` or `MONTHLY`, kept as sent.
    public var renewalBillingPlanType: String?
    public var commitmentInfo: RenewalCommitmentInfo?
    /// The win-back offers Apple would sell this lapsed subscriber (App Store Connect offer ids).
    public var eligibleWinBackOfferIds: [String]?
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, autoRenewProductId, autoRenewStatus, expirationIntent, isInBillingRetryPeriod
        case gracePeriodExpiresDate, priceIncreaseStatus, offerType, offerIdentifier, signedDate, environment
        case recentSubscriptionStartDate, renewalDate, renewalPrice, currency, appAccountToken, renewalBillingPlanType, commitmentInfo
        case eligibleWinBackOfferIds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        autoRenewProductId = try c.decodeIfPresent(String.self, forKey: .autoRenewProductId)
        autoRenewStatus = try c.decodeIfPresent(Int.self, forKey: .autoRenewStatus)
        expirationIntent = try c.decodeIfPresent(Int.self, forKey: .expirationIntent)
        isInBillingRetryPeriod = try c.decodeIfPresent(Bool.self, forKey: .isInBillingRetryPeriod)
        gracePeriodExpiresDate = try c.decodeIfPresent(AppleDate.self, forKey: .gracePeriodExpiresDate)
        priceIncreaseStatus = try c.decodeIfPresent(Int.self, forKey: .priceIncreaseStatus)
        offerType = try c.decodeIfPresent(Int.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        signedDate = try c.decodeIfPresent(AppleDate.self, forKey: .signedDate)
        environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        recentSubscriptionStartDate = try c.decodeIfPresent(AppleDate.self, forKey: .recentSubscriptionStartDate)
        renewalDate = try c.decodeIfPresent(AppleDate.self, forKey: .renewalDate)
        renewalPrice = try c.decodeIfPresent(Int64.self, forKey: .renewalPrice)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        renewalBillingPlanType = try? c.decodeIfPresent(String.self, forKey: .renewalBillingPlanType)
        commitmentInfo = try? c.decodeIfPresent(RenewalCommitmentInfo.self, forKey: .commitmentInfo)
        // A list of anything but strings is kept in `fields`, never fatal.
        eligibleWinBackOfferIds = try? c.decodeIfPresent([String].self, forKey: .eligibleWinBackOfferIds)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}
