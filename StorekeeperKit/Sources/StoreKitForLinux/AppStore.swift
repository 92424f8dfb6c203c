/// As Apple documents it (developer.apple.com/documentation/storekit/appstore): the members the
/// adapter uses.
@available(iOS 15.0, macOS 12.0, tvOS 15.0, watchOS 8.0, visionOS 1.0, *)
public enum AppStore {
    /// Brings the device's transactions up to date with the App Store; may ask the user to sign
    /// in, and throws `StoreKitError.userCancelled` if they decline (…/appstore/sync()).
    public static func sync() async throws { try await Product.store().sync() }
}
