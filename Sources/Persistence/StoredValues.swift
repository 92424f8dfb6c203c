public import Foundation
import StorekeeperDomain

/// The kind of the job that verifies one receipt with Apple. Every adapter enqueues it.
public let verifyReceiptJobKind = "verify_receipt"

/// The kind of the job that verifies a StoreKit 2 signed transaction locally and grants it.
public let verifySignedTransactionJobKind = "verify_signed_transaction"

/// Dates are stored as integer milliseconds since 1970 by every adapter: exact, sortable, and
/// the same bytes in SQLite and PostgreSQL, so the two backends compare equal in the conformance suite.
public enum StoredTime {
    public static func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
    public static func ms(_ date: Date?) -> Int64? { date.map(ms) }
    public static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
    public static func date(_ ms: Int64?) -> Date? { ms.map(date) }
}

/// Small structured columns (statuses, hints, grant summaries, catalog bodies) are JSON text
/// with sorted keys, so equal values are equal strings in either database.
public enum StoredJSON {
    public static func encode<T: Encodable>(_ value: T) -> String {
        let encoder = JSONEncoder()
        // Whole milliseconds: `.millisecondsSince1970` writes the `Double` (…471.9998).
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var c = encoder.singleValueContainer()
            try c.encode(StoredTime.ms(date))
        }
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
    }

    public static func decode<T: Decodable>(_ type: T.Type, _ text: String?) -> T? {
        guard let text else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .millisecondsSince1970
        return try? decoder.decode(type, from: Data(text.utf8))
    }
}

/// Job kind of a subscriber refresh: the customer's history fetched from the App Store Server
/// API (the submitted data is the transaction ids to ask about, comma-separated).
public let refreshFromServerAPIJobKind = "refresh_from_server_api"

/// The reason stored on a job and its verification when a stopping process gave the job back
/// before it finished (not a failure; the attempt is not counted).
public let releasedReason = FailureReason.releasedAtShutdown.rawValue
