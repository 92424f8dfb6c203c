import Foundation
public import StorekeeperWire

// The decoded payloads of Apple's signed data (JWS), one file per Apple type: StoreKit 2
// transactions, renewal infos, App Store Server Notifications V2 and app transactions. Dates are
// milliseconds since 1970 (Xcode writes fractions, `AppleDate`); enumerations are open
// (`RawStringValue`, or integers kept as sent); every field, known or not, is also kept in
// `fields`.

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
    /// The offer's length, an ISO 8601 duration (`P1M`), since 2024.
    public var offerPeriod: String?
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
        case billingPlanType, commitmentInfo, offerPeriod
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
        offerPeriod = try? c.decodeIfPresent(String.self, forKey: .offerPeriod)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    /// Encodes every field as received (`fields`), so a stored payload round-trips unchanged.
    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}
