import Foundation
public import StorekeeperWire

/// `type` of a transaction.
public struct SignedProductType: RawStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let autoRenewable = Self(rawValue: "Auto-Renewable Subscription")
    public static let nonConsumable = Self(rawValue: "Non-Consumable")
    public static let consumable = Self(rawValue: "Consumable")
    public static let nonRenewing = Self(rawValue: "Non-Renewing Subscription")
}

/// `inAppOwnershipType`: bought by this Apple account, or shared with it by Family Sharing.
public struct OwnershipType: RawStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let purchased = Self(rawValue: "PURCHASED")
    public static let familyShared = Self(rawValue: "FAMILY_SHARED")
}

/// `notificationType` of a V2 notification.
public struct NotificationType: RawStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let subscribed = Self(rawValue: "SUBSCRIBED")
    public static let didRenew = Self(rawValue: "DID_RENEW")
    public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
    public static let expired = Self(rawValue: "EXPIRED")
    public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
    public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
    public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
    public static let refund = Self(rawValue: "REFUND")
    public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
    public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
    public static let revoke = Self(rawValue: "REVOKE")
    public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
    public static let renewalExtension = Self(rawValue: "RENEWAL_EXTENSION")
    public static let offerRedeemed = Self(rawValue: "OFFER_REDEEMED")
    public static let priceIncrease = Self(rawValue: "PRICE_INCREASE")
    public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
    public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
    /// The customer withdrew consent to share their data with the app; carries `appData`, no `data`.
    public static let rescindConsent = Self(rawValue: "RESCIND_CONSENT")
    public static let test = Self(rawValue: "TEST")
}
