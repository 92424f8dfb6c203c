import Foundation
import StorekeeperWire

/// What the user owns, as the server last said in a verified answer.
public struct Entitlements: Codable, Sendable, Hashable {
    public var appUserId: String
    /// Product ids that unlock something now.
    public var activeEntitlements: [String]
    /// Credits from consumables, when the app sells them.
    public var creditBalance: Int?
    /// When the server signed the answer (its clock, not this device's, which can be set back),
    /// or this device's time of the check where no keys are pinned: the staleness limit counts
    /// from here.
    public var verifiedAt: Date
    /// The app's named entitlements (`pro`) the user holds or held, by id (docs/ENTITLEMENTS.md).
    public var entitlements: [String: EntitlementInfo]

    public init(
        appUserId: String, activeEntitlements: [String] = [], creditBalance: Int? = nil, verifiedAt: Date,
        entitlements: [String: EntitlementInfo] = [:]
    ) {
        self.appUserId = appUserId
        self.activeEntitlements = activeEntitlements
        self.creditBalance = creditBalance
        self.verifiedAt = verifiedAt
        self.entitlements = entitlements
    }

    public func owns(_ productId: String) -> Bool { activeEntitlements.contains(productId) }

    /// Whether the named entitlement gives access now (`entitlements["pro"]?.isActive`).
    public func isActive(_ entitlementId: String) -> Bool { entitlements[entitlementId]?.isActive == true }
}

/// One named entitlement and the purchase behind it, as the server decided it.
public struct EntitlementInfo: Codable, Sendable, Hashable {
    /// Where the current period's access was bought. Values a newer server sends are kept.
    public enum PeriodType: Codable, Sendable, Hashable {
        case normal, trial, introductory, promotional
        case other(String)

        public init(from decoder: any Decoder) throws {
            self.init(Subscriber.Entitlement.PeriodType(rawValue: try decoder.singleValueContainer().decode(String.self)))
        }

        init(_ wire: Subscriber.Entitlement.PeriodType) {
            switch wire.rawValue {
            case "normal": self = .normal
            case "trial": self = .trial
            case "introductory": self = .introductory
            case "promotional": self = .promotional
            case let text: self = .other(text)
            }
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .normal: try container.encode("normal")
            case .trial: try container.encode("trial")
            case .introductory: try container.encode("introductory")
            case .promotional: try container.encode("promotional")
            case .other(let text): try container.encode(text)
            }
        }
    }

    public var id: String
    public var isActive: Bool
    /// When access ends; nil for a lifetime purchase.
    public var expiresAt: Date?
    /// Nil while Apple has not said whether the subscription renews.
    public var willRenew: Bool?
    public var periodType: PeriodType
    /// The product bought; nil when an operator granted it (`isPromotional`).
    public var productId: String?
    /// Given by the app's operator (support, a promotion), not bought.
    public var isPromotional: Bool
    /// Shared by a family member rather than bought by the user.
    public var isFamilyShared: Bool
    /// A renewal failed and Apple is retrying (still active during a grace period).
    public var billingIssue: Bool
    public var gracePeriodExpiresAt: Date?
    /// Auto-renew is off: access ends at `expiresAt`.
    public var unsubscribed: Bool
    /// While `billingIssue` / `unsubscribed` hold: when the server first saw them.
    public var billingIssueDetectedAt: Date?
    public var unsubscribeDetectedAt: Date?
    /// The operator's grant behind it, when `isPromotional`.
    public var grantId: String?
    /// The plan the subscription moves to at its next renewal, when the user chose another of
    /// the group (a downgrade waits for the renewal); this plan's access runs until then.
    public var pendingProductId: String?
    /// A higher price announced for the subscription's next renewals: `pending` until the user
    /// agrees (StoreKit's price consent sheet, `Storekeeper.storeMessages()`), and without that
    /// access ends at `expiresAt`; `agreed` once they did, or where no consent is needed.
    public var priceIncreaseStatus: PriceIncreaseStatus?

    /// The server's `priceIncreaseStatus`.
    public enum PriceIncreaseStatus: String, Codable, Sendable, Hashable {
        case pending
        case agreed
    }

    public init(
        id: String, isActive: Bool, expiresAt: Date? = nil, willRenew: Bool? = nil, periodType: PeriodType = .normal, productId: String?,
        isPromotional: Bool = false, isFamilyShared: Bool = false, billingIssue: Bool = false, gracePeriodExpiresAt: Date? = nil,
        unsubscribed: Bool = false, billingIssueDetectedAt: Date? = nil, unsubscribeDetectedAt: Date? = nil, grantId: String? = nil,
        pendingProductId: String? = nil, priceIncreaseStatus: PriceIncreaseStatus? = nil
    ) {
        self.pendingProductId = pendingProductId
        self.priceIncreaseStatus = priceIncreaseStatus
        self.billingIssueDetectedAt = billingIssueDetectedAt
        self.unsubscribeDetectedAt = unsubscribeDetectedAt
        self.grantId = grantId
        self.isPromotional = isPromotional
        self.id = id
        self.isActive = isActive
        self.expiresAt = expiresAt
        self.willRenew = willRenew
        self.periodType = periodType
        self.productId = productId
        self.isFamilyShared = isFamilyShared
        self.billingIssue = billingIssue
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.unsubscribed = unsubscribed
    }

    /// From the server's answer (`ownership`: `purchased` or `family_shared`; `source`:
    /// `purchase`, `promotional` or `import`). A price-increase status a newer server sends is
    /// left out rather than failing the answer.
    init(_ wire: Subscriber.Entitlement) {
        self.init(
            id: wire.id, isActive: wire.isActive, expiresAt: wire.expiresAt, willRenew: wire.willRenew, periodType: PeriodType(wire.periodType),
            productId: wire.productId, isPromotional: wire.source == .promotional, isFamilyShared: wire.ownership == .familyShared,
            billingIssue: wire.billingIssue, gracePeriodExpiresAt: wire.gracePeriodExpiresAt, unsubscribed: wire.unsubscribed,
            billingIssueDetectedAt: wire.billingIssueDetectedAt, unsubscribeDetectedAt: wire.unsubscribeDetectedAt, grantId: wire.grantId,
            pendingProductId: wire.pendingProductId,
            priceIncreaseStatus: wire.priceIncreaseStatus.flatMap { PriceIncreaseStatus(rawValue: $0.rawValue) })
    }
}
