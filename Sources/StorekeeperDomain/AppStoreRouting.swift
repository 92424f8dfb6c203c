public import AppStoreModels

/// Which verifyReceipt environment to call next. Apple's rule: production first; 21007 means
/// "this is a sandbox receipt", 21008 the reverse. A client's own sandbox flag is never used.
public enum AppStoreRouting {
    public static let firstEnvironment = AppStoreEnvironment.production

    /// The environment to retry in after `status` came from `environment`, or nil when the
    /// answer is final for routing purposes.
    public static func redirect(after status: AppStoreStatus, from environment: AppStoreEnvironment) -> AppStoreEnvironment? {
        switch (status, environment) {
        case (.sandboxReceiptInProduction, .production): return .sandbox
        case (.productionReceiptInSandbox, .sandbox): return .production
        default: return nil
        }
    }

    /// At most production → sandbox → production: a loop beyond that is Apple misbehaving.
    public static let maximumHops = 3
}
