import AppStoreModels
import Foundation
import StorekeeperWire
import TestFixtures
import Testing

/// The one-pass JSON reader and the decoder over its values must read exactly what Foundation's
/// `JSONDecoder` reads, and refuse what it refuses.
@Suite("JSON reader for signed payloads")
struct JSONParsingTests {
    static let folders = ["storekit2/models", "verify_receipt", "notifications_v1"]

    static var fixtureFiles: [String] {
        folders.flatMap { folder in TestPaths.fixtures(in: folder).map { "\(folder)/\($0)" } }
    }

    @Test("every JSON fixture reads to the same value as JSONDecoder's")
    func sameAsFoundation() throws {
        let files = Self.fixtureFiles
        #expect(files.count > 40)
        for file in files {
            let data = try TestPaths.fixture(file)
            let foundation = try JSONDecoder().decode(JSONValue.self, from: data)
            let ours = try JSONValue.parse(Array(data))
            #expect(ours == foundation, "\(file)")
        }
    }

    @Test("payload types decode the same from the value as from the bytes")
    func typedDecoding() throws {
        func same<T: Decodable & Equatable>(_ type: T.Type, _ file: String) throws {
            let data = try TestPaths.fixture("storekit2/models/\(file).json")
            let fromValue = try JSONValue.parse(Array(data)).decode(T.self)
            let fromBytes = try JSONDecoder().decode(T.self, from: data)
            #expect(fromValue == fromBytes, "\(file)")
        }
        try same(SignedTransaction.self, "signedTransaction")
        try same(SignedTransaction.self, "signedTransactionWithRevocation")
        try same(SignedRenewalInfo.self, "signedRenewalInfo")
        try same(NotificationPayload.self, "signedNotification")
        try same(NotificationPayload.self, "signedSummaryNotification")
        try same(NotificationPayload.self, "signedExternalPurchaseTokenNotification")
        try same(SignedAppTransaction.self, "appTransaction")
        try same(StatusResponse.self, "getAllSubscriptionStatusesResponse")
        try same(NotificationHistoryResponse.self, "getNotificationHistoryResponse")
        let transaction = try JSONValue.parse(Array(try TestPaths.fixture("storekit2/models/signedTransaction.json"))).decode(
            SignedTransaction.self)
        #expect(transaction.transactionId == "23456" && transaction.price == 10990 && transaction.quantity == 1)
        #expect(transaction.fields["advancedCommerceInfo"] != nil, "unknown fields kept")

        // Wrong types are errors, as with JSONDecoder.
        let wrongType = try JSONValue.parse(Array(#"{"quantity":"one"}"#.utf8))
        #expect(throws: DecodingError.self) { try wrongType.decode(SignedTransaction.self) }
        let fraction = try JSONValue.parse(Array(#"{"quantity":1.5}"#.utf8))
        #expect(throws: DecodingError.self) { try fraction.decode(SignedTransaction.self) }
        #expect(throws: DecodingError.self) {
            try JSONValue.parse(Array(try TestPaths.fixture("storekit2/models/transactionHistoryResponseWithMalformedAppAppleId.json")))
                .decode(HistoryResponse.self)
        }
    }

    @Test("escapes, numbers and limits")
    func edges() throws {
        #expect(try JSONValue.parse(Array(#""caf\u00e9 \ud83d\ude00 \"q\" \\ \/ \n""#.utf8)) == .string("café 😀 \"q\" \\ / \n"))
        #expect(
            try JSONValue.parse(Array("[0, -0, 12, -7, 1.5, 2e3, -1E-2, 123456789012345678901]".utf8))
                == .array([
                    .number(0), .number(0), .number(12), .number(-7), .number(1.5), .number(2000), .number(-0.01),
                    .number(Double("123456789012345678901")!),
                ]))
        #expect(
            try JSONValue.parse(Array(" {\"a\" : [ true , false , null ] } ".utf8)) == .object(["a": .array([.bool(true), .bool(false), .null])]))
        #expect(try JSONValue.parse(Array("\"名前\"".utf8)) == .string("名前"))
        let invalid = [
            "", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul", "\"\\x\"", "\"\\ud800\"", "\"\\udc00\"",
            "\"a\u{01}\"", "\"open", "{\"a\" 1}", "[1 2]", "{} {}", "NaN", "'a'", "{1:2}", "{\"a\":1,\"a\":2}",
        ]
        for text in invalid {
            #expect(throws: JSONParseError.self, "\(text.debugDescription)") { try JSONValue.parse(Array(text.utf8)) }
        }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Array(deep.utf8)) }
        let fine = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONValue.parse(Array(fine.utf8)) }
    }
}
