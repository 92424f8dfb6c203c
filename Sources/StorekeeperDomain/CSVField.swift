import Foundation

/// A field of a CSV file that people open in a spreadsheet (the ledger export, the import
/// report): quoted when it must be (RFC 4180), and a value that a spreadsheet would run as a
/// formula (a leading `=`, `+`, `-` or `@` that is not a number) is prefixed with `'`, so a user
/// id or a product id chosen by an attacker stays text.
public enum CSVField {
    public static func quote(_ field: String) -> String {
        var value = field
        if let first = value.first, "=+-@".contains(first), Int(value) == nil { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
