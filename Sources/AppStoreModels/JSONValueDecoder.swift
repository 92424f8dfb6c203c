import Foundation
public import StorekeeperWire

/// Where a value sits, built only when an error needs it (a path array per field would cost
/// more than the decoding).
private final class CodingPathNode: Sendable {
    let parent: CodingPathNode?
    let key: JSONValueKey?
    init(parent: CodingPathNode?, key: JSONValueKey?) {
        self.parent = parent
        self.key = key
    }
    static let root = CodingPathNode(parent: nil, key: nil)
    var path: [any CodingKey] {
        var keys: [any CodingKey] = []
        var node: CodingPathNode? = self
        while let current = node, let key = current.key {
            keys.append(key)
            node = current.parent
        }
        return keys.reversed()
    }
}

extension JSONValue {
    /// Decodes a `Decodable` from this value with the same rules as `JSONDecoder` for the types
    /// Apple's payloads use (strings, numbers, booleans, arrays, objects, optionals); a
    /// `JSONValue` or `[String: JSONValue]` inside is handed over as is, without re-reading.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONValueDecoder(value: self, parent: .root, key: nil).decodeValue(T.self)
    }
}

private struct JSONValueKey: CodingKey, Sendable {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        stringValue = String(intValue)
        self.intValue = intValue
    }
}

private struct JSONValueDecoder: Decoder {
    let value: JSONValue
    /// The container this value sits in, and its key there: a path node is allocated only when
    /// this value opens a container of its own.
    let parent: CodingPathNode
    let key: JSONValueKey?
    var node: CodingPathNode { key.map { CodingPathNode(parent: parent, key: $0) } ?? parent }
    var codingPath: [any CodingKey] { node.path }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func mismatch(_ type: Any.Type) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: codingPath, debugDescription: "expected \(type), found \(value)"))
    }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSONValue.self { return value as! T }
        if T.self == [String: JSONValue].self {
            guard case .object(let object) = value else { throw mismatch(T.self) }
            return object as! T
        }
        return try T(from: self)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else { throw mismatch([String: Any].self) }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, node: node))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let array) = value else { throw mismatch([Any].self) }
        return UnkeyedContainer(array: array, node: node)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleContainer(decoder: self) }

    /// Numbers as JSONDecoder reads them: integers must be whole and in range.
    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard case .number(let number) = value, number.rounded(.towardZero) == number, let exact = I(exactly: number) else {
            throw mismatch(I.self)
        }
        return exact
    }

    func double() throws -> Double {
        guard case .number(let number) = value else { throw mismatch(Double.self) }
        return number
    }
}

private struct SingleContainer: SingleValueDecodingContainer {
    let decoder: JSONValueDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }

    func decodeNil() -> Bool { decoder.value == .null }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = decoder.value else { throw decoder.mismatch(Bool.self) }
        return flag
    }
    func decode(_ type: String.Type) throws -> String {
        guard case .string(let text) = decoder.value else { throw decoder.mismatch(String.self) }
        return text
    }
    func decode(_ type: Double.Type) throws -> Double { try decoder.double() }
    func decode(_ type: Float.Type) throws -> Float { Float(try decoder.double()) }
    func decode(_ type: Int.Type) throws -> Int { try decoder.integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try decoder.integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try decoder.integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try decoder.integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try decoder.integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try decoder.integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decoder.integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decoder.integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decoder.integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decoder.integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.decodeValue(T.self) }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: JSONValue]
    let node: CodingPathNode
    var codingPath: [any CodingKey] { node.path }

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    func child(_ key: Key) throws -> JSONValueDecoder {
        guard let value = object[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "no value for '\(key.stringValue)'"))
        }
        return JSONValueDecoder(value: value, parent: node, key: JSONValueKey(stringValue: key.stringValue))
    }

    func decodeNil(forKey key: Key) throws -> Bool { try child(key).value == .null }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try child(key).decodeValue(T.self) }

    /// `decodeIfPresent` as JSONDecoder does it: a missing key or null is nil, anything else must
    /// decode. One lookup; scalars are read without building a decoder (the payloads are mostly
    /// optional strings and numbers).
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return try JSONValueDecoder(value: value, parent: node, key: JSONValueKey(stringValue: key.stringValue)).decodeValue(T.self)
    }

    private func present(_ key: Key) -> JSONValue? {
        guard let value = object[key.stringValue], value != .null else { return nil }
        return value
    }

    private func scalar(_ value: JSONValue, _ key: Key) -> JSONValueDecoder {
        JSONValueDecoder(value: value, parent: node, key: JSONValueKey(stringValue: key.stringValue))
    }

    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
        guard let value = present(key) else { return nil }
        if case .string(let text) = value { return text }
        throw scalar(value, key).mismatch(String.self)
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
        guard let value = present(key) else { return nil }
        if case .bool(let flag) = value { return flag }
        throw scalar(value, key).mismatch(Bool.self)
    }

    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
        guard let value = present(key) else { return nil }
        return try scalar(value, key).double()
    }

    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
        guard let value = present(key) else { return nil }
        return try scalar(value, key).integer(Int.self)
    }

    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? {
        guard let value = present(key) else { return nil }
        return try scalar(value, key).integer(Int64.self)
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try child(key).container(keyedBy: NestedKey.self)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { try child(key).unkeyedContainer() }

    func superDecoder() throws -> any Decoder { JSONValueDecoder(value: .object(object), parent: node, key: nil) }

    func superDecoder(forKey key: Key) throws -> any Decoder { try child(key) }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let array: [JSONValue]
    let node: CodingPathNode
    var codingPath: [any CodingKey] { node.path }
    var currentIndex = 0

    init(array: [JSONValue], node: CodingPathNode) {
        self.array = array
        self.node = node
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    mutating func next() throws -> JSONValueDecoder {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(Any.self, .init(codingPath: codingPath, debugDescription: "array has no more elements"))
        }
        defer { currentIndex += 1 }
        return JSONValueDecoder(value: array[currentIndex], parent: node, key: JSONValueKey(intValue: currentIndex))
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, array[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(T.self) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: NestedKey.self)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { try next().unkeyedContainer() }

    mutating func superDecoder() throws -> any Decoder { try next() }
}
