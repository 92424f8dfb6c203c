import Foundation
public import StorekeeperWire

/// The outer payload of an App Store Server Notification V2 (`responseBodyV2DecodedPayload`).
/// Its nested `signedTransactionInfo` and `signedRenewalInfo` are JWS of their own, verified separately.
public struct NotificationPayload: Codable, Hashable, Sendable {
    public struct NotificationData: Codable, Hashable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var environment: AppStoreEnvironment?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: Int?
        public var consumptionRequestReason: String?
    }

    /// Present instead of `data` for summaries (e.g. RENEWAL_EXTENSION / SUMMARY).
    public struct Summary: Codable, Hashable, Sendable {
        public var environment: AppStoreEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var requestIdentifier: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?
    }

    /// Present for app-level notifications (e.g. RESCIND_CONSENT).
    public struct AppData: Codable, Hashable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: AppStoreEnvironment?
        public var signedAppTransactionInfo: String?
    }

    public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: AppleDate?
        public var appAppleId: Int64?
        public var bundleId: String?
    }

    public var notificationType: NotificationType?
    public var subtype: String?
    public var notificationUUID: String?
    public var version: String?
    public var signedDate: AppleDate?
    public var data: NotificationData?
    public var summary: Summary?
    public var appData: AppData?
    public var externalPurchaseToken: ExternalPurchaseToken?
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey {
        case notificationType, subtype, notificationUUID, version, signedDate, data, summary, appData, externalPurchaseToken
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationType = try c.decodeIfPresent(NotificationType.self, forKey: .notificationType)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        notificationUUID = try c.decodeIfPresent(String.self, forKey: .notificationUUID)
        version = try c.decodeIfPresent(String.self, forKey: .version)
        signedDate = try c.decodeIfPresent(AppleDate.self, forKey: .signedDate)
        data = try c.decodeIfPresent(NotificationData.self, forKey: .data)
        summary = try c.decodeIfPresent(Summary.self, forKey: .summary)
        appData = try c.decodeIfPresent(AppData.self, forKey: .appData)
        externalPurchaseToken = try c.decodeIfPresent(ExternalPurchaseToken.self, forKey: .externalPurchaseToken)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }

    /// The app the notification is about, wherever this notification kind carries it.
    public var bundleId: String? { data?.bundleId ?? summary?.bundleId ?? appData?.bundleId ?? externalPurchaseToken?.bundleId }
    public var appAppleId: Int64? {
        data?.appAppleId ?? summary?.appAppleId ?? appData?.appAppleId ?? externalPurchaseToken?.appAppleId
    }
    public var environment: AppStoreEnvironment? {
        if let environment = data?.environment ?? summary?.environment ?? appData?.environment { return environment }
        // External purchase tokens carry no environment; Apple marks sandbox ids with a prefix.
        if let id = externalPurchaseToken?.externalPurchaseId { return id.hasPrefix("SANDBOX") ? .sandbox : .production }
        return nil
    }
}
