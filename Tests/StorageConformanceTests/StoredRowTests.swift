import Foundation
import Testing

@testable import StoragePostgres

/// Rows carried as `row_to_json` text (a grant's facts and a subscriber's rows arrive that way,
/// one statement for several tables) must decode to exactly what the binary result would.
@Suite("stored rows carried as JSON")
struct StoredRowTests {
    @Test("BIGINT is exact at the ends of its range, NULL is nil, text and booleans keep their values")
    func exact() throws {
        let row = try JSONStoredRow(
            #"{"max": 9223372036854775807, "min": -9223372036854775808, "odd": 9007199254740993, "none": null, "t": "ü\"x", "b": false}"#)
        #expect(try row.value("max", as: Int64.self) == .max)
        #expect(try row.value("min", as: Int64.self) == .min)
        #expect(try row.value("odd", as: Int64.self) == 9_007_199_254_740_993, "2^53 + 1: lost through a Double")
        #expect(try row.value("none", as: Int64?.self) == nil)
        #expect(try row.value("none", as: String?.self) == nil)
        #expect(try row.value("t", as: String.self) == "ü\"x")
        #expect(try row.value("b", as: Bool.self) == false)
        // 0 and 1 are integers (a quantity, a flag stored as BIGINT), never booleans.
        let small = try JSONStoredRow(#"{"zero": 0, "one": 1, "yes": true}"#)
        #expect(try small.value("zero", as: Int64.self) == 0)
        #expect(try small.value("one", as: Int.self) == 1)
        #expect(throws: StoredJSONColumnMismatch.self) { try small.value("one", as: Bool.self) }
        #expect(throws: StoredJSONColumnMismatch.self) { try small.value("yes", as: Int64.self) }
        #expect(try row.optionalDate("none") == nil)
        #expect(try row.date("odd") == Date(timeIntervalSince1970: 9_007_199_254_740.993))
    }

    @Test("a column of another type, or missing, is an error, never a default")
    func refusals() throws {
        let row = try JSONStoredRow(#"{"n": 12, "t": "12", "b": true}"#)
        #expect(throws: StoredJSONColumnMismatch.self) { try row.value("t", as: Int64.self) }
        #expect(throws: StoredJSONColumnMismatch.self) { try row.value("n", as: String.self) }
        #expect(throws: StoredJSONColumnMismatch.self) { try row.value("b", as: Int64.self) }
        #expect(throws: StoredJSONColumnMismatch.self) { try row.value("absent", as: String?.self) }
        // No stored column is a float: a row carrying one is refused whole.
        #expect(throws: (any Error).self) { try JSONStoredRow(#"{"f": 1.5}"#) }
        #expect(throws: (any Error).self) { try JSONStoredRow("[1, 2]") }
    }
}
