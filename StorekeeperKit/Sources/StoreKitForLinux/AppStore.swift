import UIKit

/// As Apple documents it (developer.apple.com/documentation/storekit/appstore): the members the
/// adapter uses.
@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
public enum AppStore {
    /// Brings the device's transactions up to date with the App Store; may ask the user to sign
    /// in, and throws `StoreKitError.userCancelled` if they decline (…/appstore/sync()).
    public static func sync() async throws { try await Product.store().sync() }

    /// The App Store's sheet to manage the user's subscriptions, in `scene`
    /// (…/appstore/showmanagesubscriptions(in:)): iOS 15+, Mac Catalyst 15+, visionOS 1+.
    @available(iOS 15.0, visionOS 1.0, *)
    @available(macOS, unavailable)
    @available(tvOS, unavailable)
    @available(watchOS, unavailable)
    @MainActor
    public static func showManageSubscriptions(in scene: UIWindowScene) async throws {
        try await Product.store().showManageSubscriptions()
    }

    /// The App Store's sheet where the customer redeems an offer code, in `scene`
    /// (…/appstore/presentoffercoderedeemsheet(in:)): iOS 16+, Mac Catalyst 16+, visionOS 1+. The
    /// purchase a code makes arrives through `Transaction.updates`.
    @available(iOS 16.0, visionOS 1.0, *)
    @available(macOS, unavailable)
    @available(tvOS, unavailable)
    @available(watchOS, unavailable)
    @MainActor
    public static func presentOfferCodeRedeemSheet(in scene: UIWindowScene) async throws {
        try await Product.store().presentOfferCodeRedeemSheet()
    }
}
