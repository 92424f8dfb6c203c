public import Foundation
public import StorekeeperWire

/// The app transaction (`AppTransaction`): proof the app was obtained from the App Store.
public struct SignedAppTransaction: Codable, Hashable, Sendable {
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: AppleDate?
    public var originalPurchaseDate: AppleDate?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: AppleDate?
    public var appTransactionId: String?
    public var originalPlatform: String?
    public var signedDate: AppleDate?
    public var fields: [String: JSONValue] = [:]

    enum CodingKeys: String, CodingKey {
        case receiptType, appAppleId, bundleId, applicationVersion, versionExternalIdentifier, receiptCreationDate
        case originalPurchaseDate, originalApplicationVersion, deviceVerification, deviceVerificationNonce, preorderDate
        case appTransactionId, originalPlatform, signedDate
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        receiptType = try c.decodeIfPresent(AppStoreEnvironment.self, forKey: .receiptType)
        appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        applicationVersion = try c.decodeIfPresent(String.self, forKey: .applicationVersion)
        versionExternalIdentifier = try c.decodeIfPresent(Int64.self, forKey: .versionExternalIdentifier)
        receiptCreationDate = try c.decodeIfPresent(AppleDate.self, forKey: .receiptCreationDate)
        originalPurchaseDate = try c.decodeIfPresent(AppleDate.self, forKey: .originalPurchaseDate)
        originalApplicationVersion = try c.decodeIfPresent(String.self, forKey: .originalApplicationVersion)
        deviceVerification = try c.decodeIfPresent(String.self, forKey: .deviceVerification)
        deviceVerificationNonce = try c.decodeIfPresent(String.self, forKey: .deviceVerificationNonce)
        preorderDate = try c.decodeIfPresent(AppleDate.self, forKey: .preorderDate)
        appTransactionId = try c.decodeIfPresent(String.self, forKey: .appTransactionId)
        originalPlatform = try c.decodeIfPresent(String.self, forKey: .originalPlatform)
        signedDate = try c.decodeIfPresent(AppleDate.self, forKey: .signedDate)
        fields = try decoder.singleValueContainer().decode([String: JSONValue].self)
    }

    public func encode(to encoder: any Encoder) throws { try fields.encode(to: encoder) }
}

extension SignedAppTransaction {
    /// When the App Store signed it: Apple's `receiptCreationDate` ("the date that the App Store
    /// signed the JWS app transaction"; Apple's server library knows no `signedDate` on it), else a
    /// `signedDate` some StoreKit versions add.
    public var signedAt: Date? { (receiptCreationDate ?? signedDate)?.date }
}
