import Foundation

/// One currency to report every sale in, with the operator's exchange rates by month
/// (`apps[].reporting`): never a rate fetched from the network, so a report reads the same
/// tomorrow. A rate is a decimal string of units of the reporting currency per unit of the
/// other (`"EUR": "1.0850"`), at most six decimal places, kept as an exact integer.
public struct ReportingCurrency: Codable, Hashable, Sendable {
    public var currency: String
    /// By month (`2026-11`, UTC) and currency (`EUR`).
    public var rates: [String: [String: String]]
    /// A CSV file of more rates (`month,currency,rate` per line), read with the configuration
    /// (relative to its file) and merged into `rates`: finance keeps its table where it likes.
    public var ratesFile: String?

    public init(currency: String, rates: [String: [String: String]] = [:], ratesFile: String? = nil) {
        self.currency = currency
        self.rates = rates
        self.ratesFile = ratesFile
    }

    public enum CodingKeys: String, CodingKey, CaseIterable { case currency, rates, ratesFile }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        currency = try c.decode(String.self, forKey: .currency)
        rates = try c.decodeIfPresent([String: [String: String]].self, forKey: .rates) ?? [:]
        ratesFile = try c.decodeIfPresent(String.self, forKey: .ratesFile)
    }

    /// Merges a rates file's text (`month,currency,rate` per line; a first line naming the
    /// columns, blank lines and `#` comments are skipped) into `rates`. A rate the table already
    /// has is accepted only when equal: a month's rate is one number, wherever it is written.
    /// Returns the problems, each with its line; nothing is merged when there is one.
    public mutating func merge(ratesCSV text: String) -> [String] {
        var problems: [String] = []
        var merged = rates
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || (index == 0 && line.lowercased().hasPrefix("month")) { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard fields.count == 3 else {
                problems.append("line \(index + 1): expected month,currency,rate")
                continue
            }
            let (month, code, rate) = (fields[0], fields[1], fields[2])
            guard Self.month(month) != nil, Self.isCurrencyCode(code), let value = Self.millionths(rate) else {
                problems.append("line \(index + 1): expected a month as YYYY-MM, an ISO 4217 code and a positive decimal of at most 6 places")
                continue
            }
            if let existing = merged[month]?[code] {
                // The same number written again (`1.085`, `1.0850`) is no conflict; the first text stays.
                if Self.millionths(existing) != value {
                    problems.append("line \(index + 1): \(month) \(code) is \(existing) already; a rate is given once")
                }
                continue
            }
            merged[month, default: [:]][code] = rate
        }
        if problems.isEmpty { rates = merged }
        return problems
    }

    /// A rate in millionths (`1.0850` → 1,085,000); nil unless a positive decimal with at most
    /// six places.
    public static func millionths(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty, whole.count <= 9,
            whole.allSatisfy(\.isASCII), whole.allSatisfy(\.isNumber)
        else { return nil }
        let fraction = parts.count == 2 ? parts[1] : ""
        guard fraction.count <= 6, fraction.allSatisfy({ $0.isASCII && $0.isNumber }), parts.count == 1 || !fraction.isEmpty else { return nil }
        guard let units = Int64(whole), let decimals = Int64(fraction.padding(toLength: 6, withPad: "0", startingAt: 0)) else { return nil }
        let value = units * 1_000_000 + decimals
        return value > 0 ? value : nil
    }

    /// What is wrong with the table, each naming its place.
    public func problems(prefix: String) -> [String] {
        var problems: [String] = []
        if !Self.isCurrencyCode(currency) { problems.append("\(prefix).currency: an ISO 4217 code such as USD") }
        for (month, table) in rates.sorted(by: { $0.key < $1.key }) {
            if Self.month(month) == nil { problems.append("\(prefix).rates.\(month): a month as YYYY-MM") }
            for (code, rate) in table.sorted(by: { $0.key < $1.key }) {
                if !Self.isCurrencyCode(code) { problems.append("\(prefix).rates.\(month).\(code): an ISO 4217 code") }
                if Self.millionths(rate) == nil {
                    problems.append("\(prefix).rates.\(month).\(code): a positive decimal with at most 6 places, as a string")
                }
            }
        }
        return problems
    }

    /// `micros` of `currency` in the reporting currency at `month`'s rate, rounded half away from
    /// zero; nil when the operator gave no rate for that month and currency.
    public func convert(_ micros: Int64, from code: String, month: String) -> Int64? {
        if code == currency { return micros }
        guard let text = rates[month]?[code], let rate = Self.millionths(text) else { return nil }
        let product = micros.magnitude.multipliedFullWidth(by: UInt64(rate))
        // A quotient beyond 64 bits would trap: no amount this large is money.
        guard product.high < 1_000_000 else { return nil }
        let (quotient, remainder) = UInt64(1_000_000).dividingFullWidth(product)
        let rounded = quotient + (remainder >= 500_000 ? 1 : 0)
        guard rounded <= UInt64(Int64.max) else { return nil }
        return micros < 0 ? -Int64(rounded) : Int64(rounded)
    }

    static func isCurrencyCode(_ text: String) -> Bool {
        text.count == 3 && text.allSatisfy { $0.isASCII && $0.isUppercase }
    }

    /// `YYYY-MM` → (year, month), or nil.
    static func month(_ text: String) -> (Int, Int)? {
        let parts = text.split(separator: "-")
        guard parts.count == 2, parts[0].count == 4, parts[1].count == 2, let year = Int(parts[0]), let month = Int(parts[1]),
            (1...12).contains(month)
        else { return nil }
        return (year, month)
    }
}
