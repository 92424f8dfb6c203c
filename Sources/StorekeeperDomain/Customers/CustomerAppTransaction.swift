public import Foundation

/// What the customer's app transaction (StoreKit's `AppTransaction`) proves about how they got
/// the app, as the app last posted it after the server verified Apple's signature: the version
/// they first obtained, for grandfathering customers who bought the app before it went free
/// (docs/ENTITLEMENTS.md), and the id Apple names the customer's account by.
public struct CustomerAppTransaction: Codable, Hashable, Sendable {
    public var appTransactionId: String
    /// `Production` or `Sandbox` (Apple's `receiptType`).
    public var environment: String
    /// The app version the customer first obtained (Apple's `originalApplicationVersion`: the
    /// build number on iOS, the marketing version on macOS).
    public var originalAppVersion: String?
    public var originalPurchaseDate: Date?
    /// `iOS`, `macOS`, `tvOS` or `visionOS`; nil from older devices.
    public var originalPlatform: String?
    /// When Apple signed it: a copy signed earlier never replaces a newer one.
    public var signedDate: Date
    /// When the server stored it.
    public var receivedAt: Date

    public init(
        appTransactionId: String, environment: String, originalAppVersion: String?, originalPurchaseDate: Date?, originalPlatform: String?,
        signedDate: Date, receivedAt: Date
    ) {
        self.appTransactionId = appTransactionId
        self.environment = environment
        self.originalAppVersion = originalAppVersion
        self.originalPurchaseDate = originalPurchaseDate
        self.originalPlatform = originalPlatform
        self.signedDate = signedDate
        self.receivedAt = receivedAt
    }

    /// Whether the customer first obtained a version older than `version`, compared as Apple's
    /// version strings are (numeric components, `1.10` after `1.9`; missing components are 0).
    /// Nil when Apple named no original version.
    public func obtainedBefore(version: String) -> Bool? {
        guard let originalAppVersion else { return nil }
        return Self.compare(originalAppVersion, version) == .orderedAscending
    }

    static func compare(_ left: String, _ right: String) -> ComparisonResult {
        let a = left.split(separator: ".").map { Int($0) ?? 0 }
        let b = right.split(separator: ".").map { Int($0) ?? 0 }
        for index in 0..<max(a.count, b.count) {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            if x != y { return x < y ? .orderedAscending : .orderedDescending }
        }
        return .orderedSame
    }
}
