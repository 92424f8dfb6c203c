import Foundation
public import StorekeeperWire

/// A legacy (version 1) App Store Server Notification: plain JSON, no signature, authenticated
/// only by `password`, the app's shared secret. Read tolerantly: its shape changed over the
/// years (`unified_receipt` since 2020, `latest_receipt_info` objects before), ids come as
/// strings or numbers, booleans as "true"/"false". Every field is kept in `fields`.
public struct NotificationV1: Decodable, Hashable, Sendable {
    public var notificationType: String?
    /// `PROD` and `Production` read as production, `Sandbox` as sandbox; others kept as sent.
    public var environment: AppStoreEnvironment?
    public var password: String?
    public var bundleId: String?
    public var bundleVersion: String?
    public var autoRenewStatus: Bool?
    public var autoRenewProductId: String?
    /// Top-level, or the first of the latest receipt info.
    public var originalTransactionId: String?
    /// The app receipt to verify: `unified_receipt.latest_receipt`, or the older top-level copy.
    public var latestReceipt: String?
    public var fields: [String: JSONValue]

    public init(from decoder: any Decoder) throws {
        fields = try [String: JSONValue](from: decoder)
        func string(_ value: JSONValue?) -> String? {
            switch value {
            case .string(let text): text.isEmpty ? nil : text
            case .number(let number): number.rounded() == number ? String(Int64(number)) : String(number)
            default: nil
            }
        }
        func object(_ value: JSONValue?) -> [String: JSONValue]? {
            if case .object(let object) = value { return object }
            return nil
        }
        notificationType = string(fields["notification_type"])
        password = string(fields["password"])
        bundleId = string(fields["bid"])
        bundleVersion = string(fields["bvrs"])
        autoRenewProductId = string(fields["auto_renew_product_id"])
        switch fields["auto_renew_status"] {
        case .bool(let flag): autoRenewStatus = flag
        case .string(let text):
            autoRenewStatus = ["true", "1"].contains(text.lowercased()) ? true : (["false", "0"].contains(text.lowercased()) ? false : nil)
        default: autoRenewStatus = nil
        }
        switch string(fields["environment"])?.lowercased() {
        case "prod", "production": environment = .production
        case "sandbox": environment = .sandbox
        case let other?: environment = AppStoreEnvironment(rawValue: other)
        case nil: environment = nil
        }
        let unified = object(fields["unified_receipt"])
        latestReceipt = string(unified?["latest_receipt"]) ?? string(fields["latest_receipt"])
        var original = string(fields["original_transaction_id"])
        if original == nil, case .array(let infos) = unified?["latest_receipt_info"] {
            original = infos.lazy.compactMap { string(object($0)?["original_transaction_id"]) }.first
        }
        if original == nil { original = string(object(fields["latest_receipt_info"])?["original_transaction_id"]) }
        originalTransactionId = original
    }
}
