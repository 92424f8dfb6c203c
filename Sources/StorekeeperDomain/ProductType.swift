import AppStoreModels
public import StorekeeperWire

/// App Store Connect product types. Stored by raw value; unknown values are kept.
public struct ProductType: RawStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let consumable = ProductType(rawValue: "consumable")
    public static let nonConsumable = ProductType(rawValue: "non_consumable")
    public static let autoRenewable = ProductType(rawValue: "auto_renewable")
    public static let nonRenewing = ProductType(rawValue: "non_renewing")
    public static let freeSubscription = ProductType(rawValue: "free_subscription")
    /// A transaction for a product the catalog does not list: recorded, never credited.
    public static let unknown = ProductType(rawValue: "unknown")

    public static let known: [ProductType] = [.consumable, .nonConsumable, .autoRenewable, .nonRenewing, .freeSubscription]
}

/// App Store Connect review status of a product. Only `readyForSale` is offered to users.
public struct ProductStatus: RawStringValue {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let pendingDeveloperApproval = ProductStatus(rawValue: "pending_developer_approval")
    public static let approvedByDeveloper = ProductStatus(rawValue: "approved_by_developer")
    public static let waitingForReview = ProductStatus(rawValue: "waiting_for_review")
    public static let inReview = ProductStatus(rawValue: "in_review")
    public static let developerActionRequired = ProductStatus(rawValue: "developer_action_required")
    public static let readyForSale = ProductStatus(rawValue: "ready_for_sale")
    public static let rejected = ProductStatus(rawValue: "rejected")
    public static let developerRemovedFromSale = ProductStatus(rawValue: "developer_removed_from_sale")

    public static let known: [ProductStatus] = [
        .pendingDeveloperApproval, .approvedByDeveloper, .waitingForReview, .inReview,
        .developerActionRequired, .readyForSale, .rejected, .developerRemovedFromSale,
    ]
}
