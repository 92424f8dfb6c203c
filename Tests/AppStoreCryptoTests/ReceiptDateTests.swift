import Foundation
import TestFixtures
import Testing

@testable import AppStoreCrypto

@Suite("receipt dates read by arithmetic")
struct ReceiptDateTests {
    /// Foundation's reading, which the arithmetic replaces for Apple's usual form.
    func foundation(_ text: String) -> Date? { try? Date.ISO8601FormatStyle().parse(text) }
    func ours(_ text: String) -> Date? { Array(text.utf8).withUnsafeBufferPointer { ReceiptDate.utcSeconds($0) } }

    @Test(
        "every second-precision UTC instant from 1601 to 2400 (a fixed-seed sample, leap days and ends of months included) reads as Foundation reads it"
    )
    func agreesWithFoundation() {
        var generator = SeededGenerator(seed: 0x5EED_DA7E)
        var texts = ["2015-08-13T07:50:46Z", "2000-02-29T23:59:59Z", "1970-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "2024-12-31T12:00:00Z"]
        for _ in 0..<20_000 {
            let seconds = Int64.random(in: -11_644_473_600...13_569_465_599, using: &generator)
            texts.append(Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(Date.ISO8601FormatStyle()))
        }
        for text in texts {
            let read = ours(text)
            #expect(read != nil && read == foundation(text), "\(text): \(String(describing: read)) against \(String(describing: foundation(text)))")
        }
    }

    @Test(
        "anything else is left to Foundation",
        arguments: [
            "2015-08-13T07:50:46+0300", "2015-08-13T07:50:46.123Z", "2015-02-29T07:50:46Z", "2015-13-01T07:50:46Z",
            "2015-08-13T24:00:00Z", "2015-08-13T07:60:00Z", "2015-08-13T07:50:60Z", "2015-08-13 07:50:46Z", "2015-08-1307:50:46ZZ",
            "２015-08-13T07:50:46Z", "", "2015-08-13T07:50:4xZ",
        ])
    func otherForms(_ text: String) {
        #expect(ours(text) == nil)
    }

    @Test("the parser reads Apple's form and the offset form to the same instants as before")
    func parserDates() {
        func value(_ text: String) -> ArraySlice<UInt8> { ([0x16, UInt8(text.utf8.count)] + Array(text.utf8))[...] }
        #expect(AppReceiptParser.date(value("2015-08-13T07:50:46Z")) == Date(timeIntervalSince1970: 1_439_452_246))
        #expect(AppReceiptParser.date(value("2015-08-13T10:50:46+0300")) == Date(timeIntervalSince1970: 1_439_452_246))
        #expect(AppReceiptParser.date(value("")) == nil)
        #expect(AppReceiptParser.date(([0x0C, 20] + Array("2015-08-13T07:50:46Z".utf8))[...]) == Date(timeIntervalSince1970: 1_439_452_246))
        // Not ASCII in an IA5String: no date, as before.
        #expect(AppReceiptParser.date(([0x16, 21] + Array("2015-08-13T07:50:46Zé".utf8).dropLast())[...]) == nil)
        #expect(AppReceiptParser.string(([0x16, 2, 0xC3, 0xA9])[...]) == nil)
        #expect(AppReceiptParser.string(([0x0C, 2, 0xC3, 0xA9])[...]) == "é")
    }
}
