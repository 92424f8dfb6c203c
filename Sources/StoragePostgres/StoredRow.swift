import Foundation
import Persistence
import PostgresNIO

/// A stored row read by column name: either a row of a statement's own result, or a row that
/// another statement carried as `row_to_json(…)` text. The second lets one statement bring
/// several tables' rows (a grant's facts, a subscriber's rows) in one round trip, each row
/// still decoded by the one function that knows its table.
protocol StoredRow {
    func value<T: StoredColumn>(_ column: String, as type: T.Type) throws -> T
}

extension StoredRow {
    func value<T: StoredColumn>(_ column: String) throws -> T { try value(column, as: T.self) }
    func date(_ column: String) throws -> Date { StoredTime.date(try value(column, as: Int64.self)) }
    func optionalDate(_ column: String) throws -> Date? { StoredTime.date(try value(column, as: Int64?.self)) }
}

/// A column type the stored tables use (TEXT, BIGINT, BOOLEAN, and NULL for each), readable
/// from PostgreSQL's binary result and from `row_to_json`'s JSON.
protocol StoredColumn: PostgresDecodable {
    init(json: StoredJSONColumn, column: String) throws
}

/// One column of a `row_to_json` row. BIGINT arrives as a JSON number and is read as an exact
/// integer (never through a `Double`).
enum StoredJSONColumn: Decodable, Sendable {
    case null
    case bool(Bool)
    case integer(Int64)
    case text(String)

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else {
            self = .text(try container.decode(String.self))
        }
    }
}

/// A column of a `row_to_json` row that is missing or of another type than its reader expects.
struct StoredJSONColumnMismatch: Error, CustomStringConvertible {
    let column: String
    let expected: String
    var description: String { "stored row's column \(column) is not \(expected)" }
}

extension String: StoredColumn {
    init(json: StoredJSONColumn, column: String) throws {
        guard case .text(let value) = json else { throw StoredJSONColumnMismatch(column: column, expected: "text") }
        self = value
    }
}

extension Int64: StoredColumn {
    init(json: StoredJSONColumn, column: String) throws {
        guard case .integer(let value) = json else { throw StoredJSONColumnMismatch(column: column, expected: "bigint") }
        self = value
    }
}

extension Int: StoredColumn {
    init(json: StoredJSONColumn, column: String) throws {
        guard case .integer(let value) = json, let exact = Int(exactly: value) else {
            throw StoredJSONColumnMismatch(column: column, expected: "bigint")
        }
        self = exact
    }
}

extension Bool: StoredColumn {
    init(json: StoredJSONColumn, column: String) throws {
        guard case .bool(let value) = json else { throw StoredJSONColumnMismatch(column: column, expected: "boolean") }
        self = value
    }
}

extension Optional: StoredColumn where Wrapped: StoredColumn, Wrapped._DecodableType == Wrapped {
    init(json: StoredJSONColumn, column: String) throws {
        if case .null = json {
            self = .none
        } else {
            self = .some(try Wrapped(json: json, column: column))
        }
    }
}

extension PostgresRandomAccessRow: StoredRow {
    func value<T: StoredColumn>(_ column: String, as type: T.Type) throws -> T {
        try self[column].decode(T.self)
    }
}

/// A row carried as `row_to_json(…)::text`.
struct JSONStoredRow: StoredRow {
    private let columns: [String: StoredJSONColumn]

    init(_ text: String) throws {
        columns = try JSONDecoder().decode([String: StoredJSONColumn].self, from: Data(text.utf8))
    }

    /// Each element of a `text[]` column of such rows, in order.
    static func rows(_ column: String, of row: PostgresRandomAccessRow) throws -> [JSONStoredRow] {
        try row.value(column, as: [String].self).map(JSONStoredRow.init)
    }

    func value<T: StoredColumn>(_ column: String, as type: T.Type) throws -> T {
        guard let json = columns[column] else { throw StoredJSONColumnMismatch(column: column, expected: "present") }
        return try T(json: json, column: column)
    }
}
