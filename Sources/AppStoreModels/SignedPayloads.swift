public import Foundation

// The decoded payloads of Apple's signed data (JWS): StoreKit 2 transactions, renewal infos,
// App Store Server Notifications V2 and app transactions. Dates are milliseconds since 1970
// (Xcode writes fractions); enumerations are open (`RawStringValue`, or integers kept as sent);
// every field, known or not, is also kept in `fields`.

/// Milliseconds since 1970 as Apple sends them, possibly fractional.
public struct AppleDate: Codable, Hashable, Sendable, Comparable {
    public var milliseconds: Double
    public init(milliseconds: Double) { self.milliseconds = milliseconds }
    public init(_ date: Date) { milliseconds = date.timeIntervalSince1970 * 1000 }
    public var date: Date { Date(timeIntervalSince1970: milliseconds / 1000) }

    public init(from decoder: any Decoder) throws {
        milliseconds = try decoder.singleValueContainer().decode(Double.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(milliseconds)
    }

    public static func < (a: AppleDate, b: AppleDate) -> Bool { a.milliseconds < b.milliseconds }
}

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

/// A StoreKit 2 transaction (`JWSTransactionDecodedPayload`).
public struct SignedTransaction: Codable, Hashable, Sendable {
    public var transactionId: String?
    public var originalTransactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: AppleDate?
    public var originalPurchaseDate: AppleDate?
    public var expiresDate: AppleDate?
    public var quantity: Int?
    public var type: SignedProductType?
    public var appAccountToken: String?
    public var inAppOwnershipType: OwnershipType?
    public var signedDate: AppleDate?
    public var revocationReason: Int?
    public var revocationDate: AppleDate?
    public var isUpgraded: Bool?
    public var offerType: Int?
    public var offerIdentifier: String?
    public var environment: AppStoreEnvironment?
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: String?
    /// Price in milli-units of `currency`.
    public var price: Int64?
    public var currency: String?
    public var offerDiscountType: String?
    public var appTransactionId: String?
    /// `REFUND_FULL`, `REFUND_PRORATED` or `FAMILY_REVOKE` (API 1.19, Notifications 2.20), kept as sent.
    public var revocationType: String?
    /// The refunded or revoked share, in milliunits of a percent (100000 = all of it).
    public var revocationPercentage: Int?
    /// `BILLED_UPFRONT` or `MONTHLY` (a monthly plan with a 12-month commitment), kept as sent.
    public var billingPlanType: String?
    public var commitmentInfo: TransactionCommitmentInfo?
    /// Every field as sent, including those this type does not name.
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey, CaseIterable {
        case transactionId, originalTransactionId, webOrderLineItemId, bundleId, productId, subscriptionGroupIdentifier
        case purchaseDate, originalPurchaseDate, expiresDate, quantity, type, appAccountToken, inAppOwnershipType, signedDate
        case revocationReason, revocationDate, isUpgraded, offerType, offerIdentifier, environment, storefront, storefrontId
        case transactionReason, price, currency, offerDiscountType, appTransactionId, revocationType, revocationPercentage
        case billingPlanType, commitmentInfo
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        transactionId = try c.decodeIfPresent(String.self, forKey: .transactionId)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        webOrderLineItemId = try c.decodeIfPresent(String.self, forKey: .webOrderLineItemId)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        subscriptionGroupIdentifier = try c.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
        purchaseDate = try c.decodeIfPresent(AppleDate.self, forKey: .purchaseDate)
        originalPurchaseDate = try c.decodeIfPresent(AppleDate.self, forKey: .originalPurchaseDate)
        expiresDate = try c.decodeIfPresent(AppleDate.self, forKey: .expiresDate)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        type = try c.decodeIfPresent(SignedProductType.self, forKey: .type)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        inAppOwnershipType = try c.decodeIfPresent(OwnershipType.self, forKey: .inAppOwnershipType)
        signedDate = try c.decodeIfPresent(AppleDate.self, forKey: .signedDate)
        revocationReason = try c.decodeIfPresent(Int.self, forKey: .revocationReason)
        revocationDate = try c.decodeIfPresent(AppleDate.self, forKey: .revocationDate)
        isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        offerType = try c.decodeIfPresent(Int.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        storefront = try c.decodeIfPresent(String.self, forKey: .storefront)
        storefrontId = try c.decodeIfPresent(String.self, forKey: .storefrontId)
        transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
        price = try c.decodeIfPresent(Int64.self, forKey: .price)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        // Newer fields that no rule needs to grant: a malformed one is dropped from the typed
        // view (still kept in `fields`) rather than costing the customer their purchase.
        revocationType = try? c.decodeIfPresent(String.self, forKey: .revocationType)
        revocationPercentage = try? c.decodeIfPresent(Int.self, forKey: .revocationPercentage)
        billingPlanType = try? c.decodeIfPresent(String.self, forKey: .billingPlanType)
        commitmentInfo = try? c.decodeIfPresent(TransactionCommitmentInfo.self, forKey: .commitmentInfo)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    /// Encodes every field as received (`fields`), so a stored payload round-trips unchanged.
    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}

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
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, autoRenewProductId, autoRenewStatus, expirationIntent, isInBillingRetryPeriod
        case gracePeriodExpiresDate, priceIncreaseStatus, offerType, offerIdentifier, signedDate, environment
        case recentSubscriptionStartDate, renewalDate, renewalPrice, currency, appAccountToken, renewalBillingPlanType, commitmentInfo
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
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}

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

/// The outer payload of an App Store Server Notification V2 (`responseBodyV2DecodedPayload`).
/// Its nested `signedTransactionInfo` and `signedRenewalInfo` are JWS of their own, verified separately.
public struct NotificationPayload: Codable, Hashable, Sendable {
    public struct NotificationData: Codable, Hashable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: AppStoreEnvironment?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int?
        public var consumptionRequestReason: String?
    }

    /// Present instead of `data` for summaries (e.g. RENEWAL_EXTENSION / SUMMARY).
    public struct Summary: Codable, Hashable, Sendable {
        public var environment: AppStoreEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var requestIdentifier: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?
    }

    /// Present for app-level notifications (e.g. RESCIND_CONSENT).
    public struct AppData: Codable, Hashable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: AppStoreEnvironment?
        public var signedAppTransactionInfo: String?
    }

    public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: AppleDate?
        public var appAppleId: Int64?
        public var bundleId: String?
    }

    public var notificationType: NotificationType?
    public var subtype: String?
    public var notificationUUID: String?
    public var version: String?
    public var signedDate: AppleDate?
    public var data: NotificationData?
    public var summary: Summary?
    public var appData: AppData?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey {
        case notificationType, subtype, notificationUUID, version, signedDate, data, summary, appData, externalPurchaseToken
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationType = try c.decodeIfPresent(NotificationType.self, forKey: .notificationType)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        notificationUUID = try c.decodeIfPresent(String.self, forKey: .notificationUUID)
        version = try c.decodeIfPresent(String.self, forKey: .version)
        signedDate = try c.decodeIfPresent(AppleDate.self, forKey: .signedDate)
        data = try c.decodeIfPresent(NotificationData.self, forKey: .data)
        summary = try c.decodeIfPresent(Summary.self, forKey: .summary)
        appData = try c.decodeIfPresent(AppData.self, forKey: .appData)
        externalPurchaseToken = try c.decodeIfPresent(ExternalPurchaseToken.self, forKey: .externalPurchaseToken)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }

    /// The app the notification is about, wherever this notification kind carries it.
    public var bundleId: String? { data?.bundleId ?? summary?.bundleId ?? appData?.bundleId ?? externalPurchaseToken?.bundleId }
    public var appAppleId: Int64? {
        data?.appAppleId ?? summary?.appAppleId ?? appData?.appAppleId ?? externalPurchaseToken?.appAppleId
    }
    public var environment: AppStoreEnvironment? {
        if let environment = data?.environment ?? summary?.environment ?? appData?.environment { return environment }
        // External purchase tokens carry no environment; Apple marks sandbox ids with a prefix.
        if let id = externalPurchaseToken?.externalPurchaseId { return id.hasPrefix("SANDBOX") ? .sandbox : .production }
        return nil
    }
}

/// The app transaction (`AppTransaction`): proof the app was obtained from the App Store.
public struct SignedAppTransaction: Codable, Hashable, Sendable {
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: AppleDate?
    public var originalPurchaseDate: AppleDate?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: AppleDate?
    public var appTransactionId: String?
    public var originalPlatform: String?
    public var signedDate: AppleDate?
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey {
        case receiptType, appAppleId, bundleId, applicationVersion, versionExternalIdentifier, receiptCreationDate
        case originalPurchaseDate, originalApplicationVersion, deviceVerification, deviceVerificationNonce, preorderDate
        case appTransactionId, originalPlatform, signedDate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        receiptType = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .receiptType)
        appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        applicationVersion = try c.decodeIfPresent(String.self, forKey: .applicationVersion)
        versionExternalIdentifier = try c.decodeIfPresent(Int64.self, forKey: .versionExternalIdentifier)
        receiptCreationDate = try c.decodeIfPresent(AppleDate.self, forKey: .receiptCreationDate)
        originalPurchaseDate = try c.decodeIfPresent(AppleDate.self, forKey: .originalPurchaseDate)
        originalApplicationVersion = try c.decodeIfPresent(String.self, forKey: .originalApplicationVersion)
        deviceVerification = try c.decodeIfPresent(String.self, forKey: .deviceVerification)
        deviceVerificationNonce = try c.decodeIfPresent(String.self, forKey: .deviceVerificationNonce)
        preorderDate = try c.decodeIfPresent(AppleDate.self, forKey: .preorderDate)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        originalPlatform = try c.decodeIfPresent(String.self, forKey: .originalPlatform)
        signedDate = try c.decodeIfPresent(AppleDate.self, forKey: .signedDate)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}
