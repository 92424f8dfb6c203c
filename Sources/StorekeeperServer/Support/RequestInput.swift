import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Path parameters as the client meant them. Hummingbird hands a route the raw segment, so an id
/// that needed encoding (`frank%20smith`, `jos%C3%A9`, `a%2Fb`) would be looked up still encoded
/// and a paying user would look like a non-payer. Every route reads its ids through here.
extension Parameters {
    func decoded(_ name: String) throws -> String {
        guard let raw = get(name) else { throw StorekeeperError(.invalidRequest, "missing path parameter '\(name)'") }
        guard let value = raw.removingPercentEncoding else {
            throw StorekeeperError(.invalidRequest, "path parameter '\(name)' is not valid percent-encoded UTF-8")
        }
        // `%00` and other control characters are in no id; C-string layers below would cut the
        // id there and find `<id>%00junk` as `<id>`.
        guard !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw StorekeeperError(
                name == "appUserId" ? .invalidAppUserId : .invalidRequest, "path parameter '\(name)' contains a control character")
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
        // Decimal only: Double() also reads hex ("0x10"), "inf" and "nan".
        let decimal = text.range(of: #"^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$"#, options: .regularExpression) != nil
        guard decimal, let value = Double(text), value.isFinite, excludingZero ? value > 0 : value >= 0, value <= (maximum ?? value) else {
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

    /// An ISO 8601 date-time with its offset (`2026-01-31T10:00:00Z`, `…+02:00`, fractions
    /// allowed) or a full date (`2026-01-31`, midnight UTC). Only real calendar dates: the
    /// formatter alone rolls 2026-02-30 over into March.
    func date(_ name: String) throws -> Date? {
        guard let text = string(name) else { return nil }
        let invalid = StorekeeperError(
            .invalidRequest, "\(name) must be an ISO 8601 date (2026-01-31) or date-time with offset (2026-01-31T10:00:00Z)")
        let formatter = ISO8601DateFormatter()
        let fullDate = #"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"#
        let dateTime = #"^[0-9]{4}-[0-9]{2}-[0-9]{2}T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"#
        if text.range(of: fullDate, options: .regularExpression) != nil {
            formatter.formatOptions = [.withFullDate]
            guard let date = formatter.date(from: text), formatter.string(from: date) == text else { throw invalid }
            return date
        }
        guard text.range(of: dateTime, options: .regularExpression) != nil else { throw invalid }
        formatter.formatOptions = text.contains(".") ? [.withInternetDateTime, .withFractionalSeconds] : [.withInternetDateTime]
        guard let date = formatter.date(from: text) else { throw invalid }
        // The calendar date as written must survive the round trip in UTC.
        let day = ISO8601DateFormatter()
        day.formatOptions = [.withFullDate]
        // Shifted by its offset and read in UTC, the instant must fall on the day as written
        // (RFC 3339 allows any offset up to ±23:59, for which Foundation may have no time zone).
        day.timeZone = TimeZone(secondsFromGMT: 0)
        let local = date.addingTimeInterval(TimeInterval(Self.offsetSeconds(text)))
        guard day.string(from: local) == String(text.prefix(10)) else { throw invalid }
        return date
    }

    /// The offset written at the end of a date-time, in seconds (0 for `Z`).
    private static func offsetSeconds(_ text: String) -> Int {
        guard !text.hasSuffix("Z") else { return 0 }
        let offset = text.suffix(6)
        let sign = offset.hasPrefix("-") ? -1 : 1
        let parts = offset.dropFirst().split(separator: ":").compactMap { Int($0) }
        guard parts.count == 2 else { return 0 }
        return sign * (parts[0] * 3600 + parts[1] * 60)
    }
}

/// What operator routes read besides the body's own fields: who acts and why, and the rule that
/// a field a route does not read is refused.
enum AdminInput {
    static let actorHeader = HTTPField.Name("Storekeeper-Actor")!
    static let reasonHeader = HTTPField.Name("Storekeeper-Reason")!

    /// The authenticated operator (`AdminGate`), with the name they gave themselves
    /// (`Storekeeper-Actor`, or `declared` from the body), their reason and their address.
    static func actor(_ request: Request, _ context: AdminRequestContext, declared: String? = nil) throws -> AuditActor {
        let actor = AuditActor(
            name: context.principal.name, reason: request.headers[reasonHeader] ?? "",
            declared: declared ?? request.headers[actorHeader], from: context.source)
        let problems = actor.problems()
        guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
        return actor
    }

    /// Refuses a body field a route does not read, so nothing looks applied that was not; the
    /// objects of a list field (`nested`: the field and what its objects may hold) likewise.
    static func refuseFields(_ data: ByteBuffer, except allowed: Set<String>, nested: [String: Set<String>] = [:], note: String?) throws {
        guard let object = try? JSONSerialization.jsonObject(with: Data(data.readableBytesView)) as? [String: Any] else { return }
        if let extra = object.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw StorekeeperError(.invalidRequest, "\(extra): unknown field" + (note.map { " (\($0))" } ?? ""))
        }
        for (field, fields) in nested {
            for (index, item) in ((object[field] as? [Any]) ?? []).enumerated() {
                guard let item = item as? [String: Any], let extra = item.keys.sorted().first(where: { !fields.contains($0) }) else { continue }
                throw StorekeeperError(.invalidRequest, "\(field)[\(index)].\(extra): unknown field")
            }
        }
    }
}
