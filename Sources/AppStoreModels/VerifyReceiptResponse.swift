public import Foundation

/// Apple's verifyReceipt answer. Every field but `status` is optional: error answers carry
/// only a status, and old (iOS 6 style) answers use other keys. The raw body is kept by the
/// caller, so fields not modelled here are never lost.
public struct VerifyReceiptResponse: Codable, Hashable, Sendable {
    public var status: AppStoreStatus
    public var environment: AppStoreEnvironment?
    public var receipt: ReceiptInfo?
    public var latestReceipt: String?
    public var latestReceiptInfo: [InAppTransaction]?
    public var pendingRenewalInfo: [PendingRenewalInfo]?
    public var isRetryable: LenientString?

    public init(
        status: AppStoreStatus,
        environment: AppStoreEnvironment? = nil,
        receipt: ReceiptInfo? = nil,
        latestReceipt: String? = nil,
        latestReceiptInfo: [InAppTransaction]? = nil,
        pendingRenewalInfo: [PendingRenewalInfo]? = nil,
        isRetryable: Bool? = nil
    ) {
        self.status = status
        self.environment = environment
        self.receipt = receipt
        self.latestReceipt = latestReceipt
        self.latestReceiptInfo = latestReceiptInfo
        self.pendingRenewalInfo = pendingRenewalInfo
        self.isRetryable = isRetryable.map { LenientString($0 ? "true" : "false") }
    }

    enum CodingKeys: String, CodingKey {
        case status, environment, receipt
        case latestReceipt = "latest_receipt"
        case latestReceiptInfo = "latest_receipt_info"
        case pendingRenewalInfo = "pending_renewal_info"
        case isRetryable = "is-retryable"
        /// Some answers spell it with an underscore.
        case isRetryableUnderscore = "is_retryable"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        status = try c.decode(AppStoreStatus.self, forKey: .status)
        environment = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .environment)
        // Every receipt field is optional and leniently typed, so an iOS 6 style receipt (other keys)
        // decodes too. A receipt that still fails must fail the whole answer: treating it as
        // "no receipt" would mark a paying user's purchase invalid.
        receipt = try c.decodeIfPresent(ReceiptInfo.self, forKey: .receipt)
        latestReceipt = try c.decodeIfPresent(String.self, forKey: .latestReceipt)
        // Old answers send `latest_receipt_info` as one object instead of an array.
        if let array = try? c.decodeIfPresent([InAppTransaction].self, forKey: .latestReceiptInfo) {
            latestReceiptInfo = array
        } else if let single = try? c.decodeIfPresent(InAppTransaction.self, forKey: .latestReceiptInfo) {
            latestReceiptInfo = [single]
        } else {
            latestReceiptInfo = nil
        }
        pendingRenewalInfo = try c.decodeIfPresent([PendingRenewalInfo].self, forKey: .pendingRenewalInfo)
        isRetryable =
            try c.decodeIfPresent(LenientString.self, forKey: .isRetryable)
            ?? c.decodeIfPresent(LenientString.self, forKey: .isRetryableUnderscore)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(status, forKey: .status)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeIfPresent(receipt, forKey: .receipt)
        try c.encodeIfPresent(latestReceipt, forKey: .latestReceipt)
        try c.encodeIfPresent(latestReceiptInfo, forKey: .latestReceiptInfo)
        try c.encodeIfPresent(pendingRenewalInfo, forKey: .pendingRenewalInfo)
        try c.encodeIfPresent(isRetryable, forKey: .isRetryable)
    }
}

/// The decoded app receipt inside a verifyReceipt answer.
public struct ReceiptInfo: Codable, Hashable, Sendable {
    public var receiptType: String?
    public var bundleId: String?
    public var applicationVersion: LenientString?
    public var originalApplicationVersion: LenientString?
    public var receiptCreationDateMs: LenientString?
    public var originalPurchaseDateMs: LenientString?
    public var inApp: [InAppTransaction]?

    public init(
        receiptType: String? = nil,
        bundleId: String?,
        applicationVersion: String? = nil,
        originalApplicationVersion: String? = nil,
        receiptCreationDateMs: LenientString? = nil,
        originalPurchaseDateMs: LenientString? = nil,
        inApp: [InAppTransaction]?
    ) {
        self.receiptType = receiptType
        self.bundleId = bundleId
        self.applicationVersion = applicationVersion.map { LenientString($0) }
        self.originalApplicationVersion = originalApplicationVersion.map { LenientString($0) }
        self.receiptCreationDateMs = receiptCreationDateMs
        self.originalPurchaseDateMs = originalPurchaseDateMs
        self.inApp = inApp
    }

    enum CodingKeys: String, CodingKey {
        case receiptType = "receipt_type"
        case bundleId = "bundle_id"
        case applicationVersion = "application_version"
        case originalApplicationVersion = "original_application_version"
        case receiptCreationDateMs = "receipt_creation_date_ms"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case inApp = "in_app"
    }
}

/// One transaction, as found in `receipt.in_app` and `latest_receipt_info`.
public struct InAppTransaction: Codable, Hashable, Sendable {
    public var quantity: LenientString?
    public var productId: String?
    public var transactionId: LenientString?
    public var originalTransactionId: LenientString?
    public var purchaseDateMs: LenientString?
    public var originalPurchaseDateMs: LenientString?
    public var expiresDateMs: LenientString?
    public var cancellationDateMs: LenientString?
    public var cancellationReason: LenientString?
    public var isTrialPeriod: LenientString?
    public var isInIntroOfferPeriod: LenientString?
    public var webOrderLineItemId: LenientString?
    public var inAppOwnershipType: String?
    public var subscriptionGroupIdentifier: LenientString?
    /// The promotional offer the subscription was bought with, and the offer code's reference name.
    public var promotionalOfferId: LenientString?
    public var offerCodeRefName: LenientString?

    public init(
        quantity: Int = 1,
        productId: String,
        transactionId: String,
        originalTransactionId: String,
        purchaseDate: Date,
        originalPurchaseDate: Date,
        expiresDate: Date? = nil,
        cancellationDate: Date? = nil,
        cancellationReason: String? = nil,
        isTrialPeriod: Bool = false,
        isInIntroOfferPeriod: Bool = false,
        webOrderLineItemId: String? = nil,
        inAppOwnershipType: String? = "PURCHASED",
        subscriptionGroupIdentifier: String? = nil
    ) {
        self.quantity = LenientString(String(quantity))
        self.productId = productId
        self.transactionId = LenientString(transactionId)
        self.originalTransactionId = LenientString(originalTransactionId)
        self.purchaseDateMs = .milliseconds(purchaseDate)
        self.originalPurchaseDateMs = .milliseconds(originalPurchaseDate)
        self.expiresDateMs = expiresDate.map(LenientString.milliseconds)
        self.cancellationDateMs = cancellationDate.map(LenientString.milliseconds)
        self.cancellationReason = cancellationReason.map { LenientString($0) }
        self.isTrialPeriod = LenientString(isTrialPeriod ? "true" : "false")
        self.isInIntroOfferPeriod = LenientString(isInIntroOfferPeriod ? "true" : "false")
        self.webOrderLineItemId = webOrderLineItemId.map { LenientString($0) }
        self.inAppOwnershipType = inAppOwnershipType
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier.map { LenientString($0) }
    }

    enum CodingKeys: String, CodingKey {
        case quantity
        case productId = "product_id"
        case transactionId = "transaction_id"
        case originalTransactionId = "original_transaction_id"
        case purchaseDateMs = "purchase_date_ms"
        case originalPurchaseDateMs = "original_purchase_date_ms"
        case expiresDateMs = "expires_date_ms"
        case cancellationDateMs = "cancellation_date_ms"
        case cancellationReason = "cancellation_reason"
        case isTrialPeriod = "is_trial_period"
        case isInIntroOfferPeriod = "is_in_intro_offer_period"
        case webOrderLineItemId = "web_order_line_item_id"
        case inAppOwnershipType = "in_app_ownership_type"
        case subscriptionGroupIdentifier = "subscription_group_identifier"
        case promotionalOfferId = "promotional_offer_id"
        case offerCodeRefName = "offer_code_ref_name"
    }
}

/// Renewal state of one auto-renewable subscription (`pending_renewal_info`).
public struct PendingRenewalInfo: Codable, Hashable, Sendable {
    public var autoRenewProductId: String?
    public var productId: String?
    public var originalTransactionId: LenientString?
    public var autoRenewStatus: LenientString?
    public var expirationIntent: LenientString?
    public var isInBillingRetryPeriod: LenientString?
    public var gracePeriodExpiresDateMs: LenientString?
    /// `0` while a price increase that needs the customer's consent waits for it, `1` once they
    /// agreed; absent without one.
    public var priceConsentStatus: LenientString?

    public init(
        autoRenewProductId: String?,
        productId: String?,
        originalTransactionId: String,
        autoRenewStatus: Bool,
        expirationIntent: String? = nil,
        isInBillingRetryPeriod: Bool? = nil,
        gracePeriodExpiresDate: Date? = nil,
        priceConsentStatus: Int? = nil
    ) {
        self.priceConsentStatus = priceConsentStatus.map { LenientString(String($0)) }
        self.autoRenewProductId = autoRenewProductId
        self.productId = productId
        self.originalTransactionId = LenientString(originalTransactionId)
        self.autoRenewStatus = LenientString(autoRenewStatus ? "1" : "0")
        self.expirationIntent = expirationIntent.map { LenientString($0) }
        self.isInBillingRetryPeriod = isInBillingRetryPeriod.map { LenientString($0 ? "1" : "0") }
        self.gracePeriodExpiresDateMs = gracePeriodExpiresDate.map(LenientString.milliseconds)
    }

    enum CodingKeys: String, CodingKey {
        case autoRenewProductId = "auto_renew_product_id"
        case productId = "product_id"
        case originalTransactionId = "original_transaction_id"
        case autoRenewStatus = "auto_renew_status"
        case expirationIntent = "expiration_intent"
        case isInBillingRetryPeriod = "is_in_billing_retry_period"
        case gracePeriodExpiresDateMs = "grace_period_expires_date_ms"
        case priceConsentStatus = "price_consent_status"
    }
}
