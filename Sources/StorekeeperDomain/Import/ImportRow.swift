import Foundation

/// One existing customer to import (docs/IMPORT.md): who they are in the app, and one thing
/// Apple can tell their purchases from.
public struct ImportRow: Codable, Hashable, Sendable {
    public enum Evidence: Hashable, Sendable {
        /// The history of the purchase is read through the App Store Server API.
        case originalTransactionId(String)
        case transactionId(String)
        /// Verified like a posted receipt.
        case receipt(String)
        /// Verified like a posted signed transaction.
        case signedTransaction(String)
    }

    public var appUserId: String
    public var evidence: Evidence

    public init(appUserId: String, evidence: Evidence) {
        self.appUserId = appUserId
        self.evidence = evidence
    }

    /// The key that makes a row's second import change nothing: its kind and value.
    public var key: String {
        switch evidence {
        case .originalTransactionId(let id): "original_transaction_id:\(id)"
        case .transactionId(let id): "transaction_id:\(id)"
        case .receipt(let receipt): "receipt:\(receipt)"
        case .signedTransaction(let jws): "signed_transaction:\(jws)"
        }
    }

    enum CodingKeys: String, CodingKey {
        case appUserId, originalTransactionId, transactionId, receipt, signedTransaction
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        appUserId = try container.decode(String.self, forKey: .appUserId)
        // A field named is a string: `null` is no evidence, and is refused rather than ignored.
        func text(_ key: CodingKeys) throws -> String? { container.contains(key) ? try container.decode(String.self, forKey: key) : nil }
        var found: [Evidence] = []
        if let id = try text(.originalTransactionId) { found.append(.originalTransactionId(id)) }
        if let id = try text(.transactionId) { found.append(.transactionId(id)) }
        if let receipt = try text(.receipt) { found.append(.receipt(receipt)) }
        if let jws = try text(.signedTransaction) { found.append(.signedTransaction(jws)) }
        guard found.count == 1, let evidence = found.first else {
            throw DecodingError.dataCorrupted(
                .init(
                    codingPath: decoder.codingPath,
                    debugDescription: "exactly one of originalTransactionId, transactionId, receipt, signedTransaction"))
        }
        self.evidence = evidence
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(appUserId, forKey: .appUserId)
        switch evidence {
        case .originalTransactionId(let id): try container.encode(id, forKey: .originalTransactionId)
        case .transactionId(let id): try container.encode(id, forKey: .transactionId)
        case .receipt(let receipt): try container.encode(receipt, forKey: .receipt)
        case .signedTransaction(let jws): try container.encode(jws, forKey: .signedTransaction)
        }
    }

    /// What is wrong with the row on its own.
    public func problems() -> [String] {
        var problems: [String] = []
        if appUserId.isEmpty || appUserId.unicodeScalars.count > 256
            || appUserId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            problems.append("appUserId: 1-256 printable characters")
        }
        switch evidence {
        case .originalTransactionId(let id), .transactionId(let id):
            if id.isEmpty || id.utf8.count > 64 || !id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) {
                problems.append("transaction id: 1-64 digits, as Apple writes them")
            }
        case .receipt(let receipt): if receipt.isEmpty { problems.append("receipt: empty") }
        case .signedTransaction(let jws):
            if jws.split(separator: ".", omittingEmptySubsequences: false).count != 3 { problems.append("signedTransaction: not a compact JWS") }
        }
        return problems
    }
}
