/// The body posted to `verifyReceipt`.
public struct VerifyReceiptRequest: Codable, Hashable, Sendable {
    public var receiptData: String
    public var password: String?
    public var excludeOldTransactions: Bool?

    public init(receiptData: String, password: String?, excludeOldTransactions: Bool?) {
        self.receiptData = receiptData
        self.password = password
        self.excludeOldTransactions = excludeOldTransactions
    }

    enum CodingKeys: String, CodingKey {
        case receiptData = "receipt-data"
        case password
        case excludeOldTransactions = "exclude-old-transactions"
    }
}
