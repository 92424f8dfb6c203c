/// A catalog entry as the API states it (`GET /v1/products`, each offering package's product).
public struct CatalogProduct: WireMessage {
    public static let location = WireLocation.schema("Product")
    public var productId: String
    /// `consumable`, `non_consumable`, `auto_renewable`, `non_renewing` (open: a newer server's
    /// type reads as its name).
    public var type: String
    /// App Store Connect's status; only `ready_for_sale` is offered to users.
    public var status: String
    /// ISO 8601 duration: a non-renewing subscription's length, an auto-renewable one's billing period.
    public var duration: String?
    /// Credits per unit bought (consumables).
    public var creditAmount: Int?
    /// Reference price in micro-units of `currency` (1 USD = 1000000).
    public var priceMicros: Int64?
    /// ISO 4217.
    public var currency: String?
    public var displayName: String?

    public init(
        productId: String, type: String, status: String, duration: String? = nil, creditAmount: Int? = nil, priceMicros: Int64? = nil,
        currency: String? = nil, displayName: String? = nil
    ) {
        self.productId = productId
        self.type = type
        self.status = status
        self.duration = duration
        self.creditAmount = creditAmount
        self.priceMicros = priceMicros
        self.currency = currency
        self.displayName = displayName
    }
}

/// The products the app may sell (`GET /v1/products`: Ready for Sale only).
public struct ProductList: WireMessage {
    public static let location = WireLocation.schema("ProductList")
    public var products: [CatalogProduct]

    public init(products: [CatalogProduct]) { self.products = products }
}
