import Foundation

/// A merge patch of what is said about a customer (`PATCH /v1/subscribers/{id}/attributes`): a
/// field sent sets it, `null` clears it, a field left out stays; `custom` likewise key by key.
/// The answer is the attributes now (``Subscriber/SubscriberAttributes``).
public struct AttributesPatch: WireMessage {
    public static let location = WireLocation.request(method: "patch", path: "/v1/subscribers/{appUserId}/attributes")

    /// A field of a merge patch: left out, `null`, or a value.
    public enum Field<Value: Hashable & Sendable>: Hashable, Sendable {
        case keep
        case clear
        case set(Value)
    }

    public var email: Field<String>
    public var displayName: Field<String>
    /// `.clear` removes every custom key; in `.set`, a nil value removes that key.
    public var custom: Field<[String: String?]>

    public init(email: Field<String> = .keep, displayName: Field<String> = .keep, custom: Field<[String: String?]> = .keep) {
        self.email = email
        self.displayName = displayName
        self.custom = custom
    }

    enum CodingKeys: String, CodingKey {
        case email, displayName, custom
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func field<Value: Decodable>(_ key: CodingKeys, _: Value.Type) throws -> Field<Value> {
            guard container.contains(key) else { return .keep }
            if try container.decodeNil(forKey: key) { return .clear }
            return .set(try container.decode(Value.self, forKey: key))
        }
        email = try field(.email, String.self)
        displayName = try field(.displayName, String.self)
        custom = try field(.custom, [String: String?].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        func put<Value: Encodable>(_ field: Field<Value>, _ key: CodingKeys) throws {
            switch field {
            case .keep: break
            case .clear: try container.encodeNil(forKey: key)
            case .set(let value): try container.encode(value, forKey: key)
            }
        }
        try put(email, .email)
        try put(displayName, .displayName)
        try put(custom, .custom)
    }
}

extension Subscriber.SubscriberAttributes: WireMessage {
    public static let location = WireLocation.schema("SubscriberAttributes")
}
