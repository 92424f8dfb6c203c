/// As Apple documents it (developer.apple.com/documentation/storekit/apptransaction): the App
/// Store's signed record of how this device's customer obtained the app, with the members the
/// adapter uses.
@available(iOS 16.0, macOS 13.0, tvOS 16.0, watchOS 9.0, visionOS 1.0, *)
public struct AppTransaction: Sendable, Hashable {
    /// (…/apptransaction/originalappversion)
    public let originalAppVersion: String
    let signedForm: String

    /// Not StoreKit's: an app transaction as the stand-in's store hands it over, with its JWS.
    public init(standInOriginalAppVersion originalAppVersion: String, jws: String) {
        self.originalAppVersion = originalAppVersion
        self.signedForm = jws
    }

    /// The app transaction for this device, from the cache or the App Store
    /// (…/apptransaction/shared).
    public static var shared: VerificationResult<AppTransaction> {
        get async throws {
            guard let store = StandIn.store else { throw StoreKitError.notAvailableInStorefront }
            return try await store.appTransaction()
        }
    }
}

extension AppTransaction: SignedByTheStore {}
