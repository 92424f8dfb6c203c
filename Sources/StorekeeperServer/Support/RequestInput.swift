import Foundation
import Hummingbird
import HummingbirdCore

/// Path parameters as the client meant them. Hummingbird hands a route the raw segment, so an id
/// that needed encoding (`frank%20smith`, `jos%C3%A9`, `a%2Fb`) would be looked up still encoded
/// and a paying user would look like a non-payer. Every route reads its ids through here.
extension Parameters {
    func decoded(_ name: String) throws -> String {
        guard let raw = get(name) else { throw StorekeeperError(.invalidRequest, "missing path parameter '\(name)'") }
        guard let value = raw.removingPercentEncoding else {
            throw StorekeeperError(.invalidRequest, "path parameter '\(name)' is not valid percent-encoded UTF-8")
        }
        return value
    }
}

/// Query parameters parsed strictly, all in one way: a value that is present but malformed is a
/// 400 naming the parameter, never silently replaced by a default (`limit=abc` meant something).
struct QueryInput {
    let parameters: FlatDictionary<Substring, Substring>

    init(_ request: Request) { parameters = request.uri.queryParameters }

    func string(_ name: String) -> String? { parameters.get(name) }

    func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text, radix: 10), range.contains(value) else {
            throw StorekeeperError(.invalidRequest, "\(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }

    /// A finite number of seconds, at least 0 (more than 0 when `excludingZero`), at most `maximum` when given.
    func seconds(_ name: String, maximum: Double? = nil, excludingZero: Bool = false) throws -> Double? {
        guard let text = string(name) else { return nil }
        guard let value = Double(text), value.isFinite, excludingZero ? value > 0 : value >= 0, value <= (maximum ?? value) else {
            let lower = excludingZero ? "more than 0" : "of at least 0"
            let upper = maximum.map { " and at most \(Int($0))" } ?? ""
            throw StorekeeperError(.invalidRequest, "\(name) must be a number of seconds \(lower)\(upper)")
        }
        return value
    }

    /// `?wait=`: how long to hold the answer for a final result. Above `cap` it is capped, not
    /// refused, so a client's generous wait still works when the operator lowers the cap.
    func wait(cap: Double) throws -> Double? {
        try seconds("wait").map { min($0, cap) }
    }

    func boolean(_ name: String) throws -> Bool? {
        guard let text = string(name) else { return nil }
        switch text {
        case "true": return true
        case "false": return false
        default: throw StorekeeperError(.invalidRequest, "\(name) must be 'true' or 'false'")
        }
    }

    func oneOf(_ name: String, _ allowed: [String]) throws -> String? {
        guard let text = string(name) else { return nil }
        guard allowed.contains(text) else {
            throw StorekeeperError(.invalidRequest, "\(name) must be one of \(allowed.map { "'\($0)'" }.joined(separator: ", "))")
        }
        return text
    }

    /// An ISO 8601 date-time (`2026-01-31T10:00:00Z`) or a full date (`2026-01-31`, midnight UTC).
    func date(_ name: String) throws -> Date? {
        guard let text = string(name) else { return nil }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        if let date = formatter.date(from: text) { return date }
        throw StorekeeperError(.invalidRequest, "\(name) must be an ISO 8601 date or date-time")
    }
}
