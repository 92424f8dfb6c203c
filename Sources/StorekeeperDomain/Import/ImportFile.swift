import Foundation

/// A file of customers to import, read whole (docs/IMPORT.md): JSON lines of `ImportRow`, our
/// CSV (`app_user_id` and one of `original_transaction_id`, `transaction_id`, `receipt`,
/// `signed_transaction` per row), or RevenueCat's Transactions export (Scheduled Data Exports:
/// `rc_original_app_user_id`, `rc_last_seen_app_user_id_alias`, `store`,
/// `store_transaction_id`, `original_store_transaction_id`). Rows the same customer and
/// evidence twice are read once.
public struct ImportFile: Sendable, Hashable {
    public enum Format: String, Sendable, Hashable, CaseIterable {
        case jsonl
        case csv
        case revenueCat = "revenuecat"
    }

    /// A line that could not be read, by its number (1-based, the header is line 1 of a CSV).
    public struct Problem: Sendable, Hashable {
        public var line: Int
        public var message: String
    }

    public var format: Format
    /// Each row with the line it came from.
    public var rows: [(line: Int, row: ImportRow)]
    public var problems: [Problem]
    /// Lines of another store's purchases (a RevenueCat export covers every store).
    public var skipped: Int

    public static func == (lhs: ImportFile, rhs: ImportFile) -> Bool {
        lhs.format == rhs.format && lhs.rows.map(\.line) == rhs.rows.map(\.line) && lhs.rows.map(\.row) == rhs.rows.map(\.row)
            && lhs.problems == rhs.problems && lhs.skipped == rhs.skipped
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(format)
        hasher.combine(rows.map(\.row))
    }

    public static func read(_ text: String, format: Format? = nil) -> ImportFile {
        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).map(String.init)
        let first = lines.first { !$0.trimmingCharacters(in: .whitespaces).isEmpty } ?? ""
        let detected =
            format
            ?? (first.trimmingCharacters(in: .whitespaces).hasPrefix("{")
                ? .jsonl : (CSV.fields(first).contains("rc_original_app_user_id") ? .revenueCat : .csv))
        var file = ImportFile(format: detected, rows: [], problems: [], skipped: 0)
        switch detected {
        case .jsonl: file.readJSONLines(lines)
        case .csv, .revenueCat: file.readCSV(lines, revenueCat: detected == .revenueCat)
        }
        var seen = Set<String>()
        file.rows = file.rows.filter { seen.insert("\($0.row.appUserId)\u{0}\($0.row.key)").inserted }
        return file
    }

    mutating func readJSONLines(_ lines: [String]) {
        let decoder = JSONDecoder()
        for (index, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            do {
                add(try decoder.decode(ImportRow.self, from: Data(line.utf8)), line: index + 1)
            } catch let DecodingError.dataCorrupted(context) {
                problems.append(Problem(line: index + 1, message: context.debugDescription))
            } catch {
                problems.append(Problem(line: index + 1, message: "not a JSON object with appUserId and one evidence field"))
            }
        }
    }

    mutating func readCSV(_ lines: [String], revenueCat: Bool) {
        guard let headerLine = lines.first else { return }
        let header = CSV.fields(headerLine).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        func column(_ name: String) -> Int? { header.firstIndex(of: name) }
        let required = revenueCat ? ["rc_original_app_user_id", "store"] : ["app_user_id"]
        for name in required where column(name) == nil {
            problems.append(Problem(line: 1, message: "no '\(name)' column"))
        }
        guard problems.isEmpty else { return }
        for (index, line) in lines.enumerated().dropFirst() where !line.trimmingCharacters(in: .whitespaces).isEmpty {
            let fields = CSV.fields(line)
            func value(_ name: String) -> String? {
                guard let at = column(name), at < fields.count else { return nil }
                let text = fields[at].trimmingCharacters(in: .whitespaces)
                return text.isEmpty ? nil : text
            }
            if revenueCat {
                guard value("store") == "app_store" else {
                    skipped += 1
                    continue
                }
                // The id the app's own systems know the customer by (an alias), unless only
                // RevenueCat's anonymous id is known.
                let alias = value("rc_last_seen_app_user_id_alias")
                let user = alias.flatMap { $0.hasPrefix("$RCAnonymousID:") ? nil : $0 } ?? value("rc_original_app_user_id")
                let id =
                    value("original_store_transaction_id").map(ImportRow.Evidence.originalTransactionId)
                    ?? value("store_transaction_id").map(ImportRow.Evidence.transactionId)
                guard let user, let id else {
                    problems.append(Problem(line: index + 1, message: "no app user id or store transaction id"))
                    continue
                }
                add(ImportRow(appUserId: user, evidence: id), line: index + 1)
            } else {
                let found: [ImportRow.Evidence] = [
                    value("original_transaction_id").map(ImportRow.Evidence.originalTransactionId),
                    value("transaction_id").map(ImportRow.Evidence.transactionId), value("receipt").map(ImportRow.Evidence.receipt),
                    value("signed_transaction").map(ImportRow.Evidence.signedTransaction),
                ].compactMap { $0 }
                guard let user = value("app_user_id"), found.count == 1 else {
                    problems.append(
                        Problem(
                            line: index + 1,
                            message: "app_user_id and exactly one of original_transaction_id, transaction_id, receipt, signed_transaction"))
                    continue
                }
                add(ImportRow(appUserId: user, evidence: found[0]), line: index + 1)
            }
        }
    }

    mutating func add(_ row: ImportRow, line: Int) {
        let problems = row.problems()
        guard problems.isEmpty else {
            self.problems.append(Problem(line: line, message: problems.joined(separator: "; ")))
            return
        }
        rows.append((line, row))
    }
}

/// RFC 4180 fields of one line: commas, double quotes around a field, `""` for a quote.
enum CSV {
    static func fields(_ line: String) -> [String] {
        var fields: [String] = []
        var field = ""
        var quoted = false
        var iterator = line.makeIterator()
        while let character = iterator.next() {
            if quoted {
                if character == "\"" {
                    // A doubled quote is a quote; a single one ends the quoted part.
                    var lookahead = iterator
                    if lookahead.next() == "\"" {
                        field.append("\"")
                        iterator = lookahead
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(character)
                }
            } else if character == "," {
                fields.append(field)
                field = ""
            } else if character == "\"" && field.isEmpty {
                quoted = true
            } else {
                field.append(character)
            }
        }
        fields.append(field)
        return fields
    }
}
