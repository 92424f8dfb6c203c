import Foundation
import UIKit

/// As Apple documents it (developer.apple.com/documentation/storekit/product): a product the App
/// Store sells, with the members the adapter uses.
@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
public struct Product: Sendable, Identifiable, Hashable {
    /// (…/product/id)
    public let id: String
    /// (…/product/displayname)
    public let displayName: String
    /// (…/product/displayprice)
    public let displayPrice: String
    /// (…/product/price)
    public let price: Decimal
    /// (…/product/priceformatstyle)
    public let priceFormatStyle: Decimal.FormatStyle.Currency
    /// (…/product/subscription): nil unless an auto-renewable subscription.
    public let subscription: Product.SubscriptionInfo?

    /// Not StoreKit's: a product as the stand-in's store lists it.
    public init(
        standInID id: String, displayName: String, displayPrice: String, price: Decimal, currencyCode: String,
        subscription: Product.SubscriptionInfo? = nil
    ) {
        self.id = id
        self.subscription = subscription
        self.displayName = displayName
        self.displayPrice = displayPrice
        self.price = price
        self.priceFormatStyle = Decimal.FormatStyle.Currency(code: currencyCode)
    }

    /// The products among `identifiers` the store sells (…/product/products(for:)).
    public static func products<Identifiers: Collection>(for identifiers: Identifiers) async throws -> [Product]
    where Identifiers.Element == String {
        try await store().products(for: Array(identifiers))
    }

    /// (…/product/purchase(options:)), main-actor isolated as documented.
    @MainActor
    public func purchase(options: Set<Product.PurchaseOption> = []) async throws -> Product.PurchaseResult {
        try await Self.store().purchase(self, options: options, confirmedIn: nil)
    }

    /// (…/product/purchase(confirmin:options:)-6dj6y): iOS 17+, Mac Catalyst 17+, tvOS 17+,
    /// visionOS 1+.
    @available(iOS 17.0, tvOS 17.0, visionOS 1.0, *)
    @available(macOS, unavailable)
    @available(watchOS, unavailable)
    @MainActor
    public func purchase(confirmIn scene: some UIScene, options: Set<Product.PurchaseOption> = []) async throws -> Product.PurchaseResult {
        try await Self.store().purchase(self, options: options, confirmedIn: scene)
    }

    static func store() throws -> any StandInStore {
        guard let store = StandIn.store else { throw StoreKitError.notAvailableInStorefront }
        return store
    }

    /// As Apple documents it (…/product/purchaseresult).
    public enum PurchaseResult: Sendable {
        case success(VerificationResult<Transaction>)
        case userCancelled
        case pending
    }
}
