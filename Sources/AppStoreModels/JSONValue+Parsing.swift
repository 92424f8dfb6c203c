import Foundation
public import StorekeeperWire

/// Why bytes are not JSON, with the offset where reading stopped.
public struct JSONParseError: Error, Hashable, Sendable, CustomStringConvertible {
    public var offset: Int
    public var reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSONValue {
    /// Reads RFC 8259 JSON from UTF-8 bytes in one pass. Signed payloads are read once with this
    /// and then decoded from the value (`decode(_:)`), instead of twice with `JSONDecoder`:
    /// verifying a StoreKit 2 transaction is dominated by that work once its chain is cached.
    /// `maximumDepth` bounds nesting so hostile input cannot exhaust the stack; an object naming
    /// a key twice is refused.
    public static func parse(_ bytes: [UInt8], maximumDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer throws(JSONParseError) -> JSONValue in
            var reader = JSONReader(bytes: buffer, maximumDepth: maximumDepth)
            reader.skipWhitespace()
            let value = try reader.value(depth: 0)
            reader.skipWhitespace()
            guard reader.index == buffer.count else { throw reader.error("trailing characters") }
            return value
        }
    }
}

private struct JSONReader {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func error(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func expect(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error("truncated literal") }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] { throw error("unknown literal") }
        index += count
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return .object(try object(depth: depth + 1))
        case UInt8(ascii: "["): return .array(try array(depth: depth + 1))
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw error("unexpected character")
        }
    }

    mutating func object(depth: Int) throws(JSONParseError) -> [String: JSONValue] {
        guard depth <= maximumDepth else { throw error("nested too deep") }
        index += 1
        var result: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return result
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
            let key = try string()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw error("expected ':'") }
            index += 1
            skipWhitespace()
            // Duplicate names are refused: two readers of one signed payload could each pick a
            // different copy, and Apple never sends them.
            guard result.updateValue(try value(depth: depth), forKey: key) == nil else { throw error("duplicate key") }
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated object") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return result
            } else {
                throw error("expected ',' or '}'")
            }
        }
    }

    mutating func array(depth: Int) throws(JSONParseError) -> [JSONValue] {
        guard depth <= maximumDepth else { throw error("nested too deep") }
        index += 1
        var result: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return result
        }
        while true {
            skipWhitespace()
            result.append(try value(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw error("unterminated array") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return result
            } else {
                throw error("expected ',' or ']'")
            }
        }
    }

    mutating func string() throws(JSONParseError) -> String {
        index += 1  // The opening quote.
        let start = index
        // Fast path: no escapes, so the bytes between the quotes are the string.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw error("control character in a string") }
            index += 1
        }
        var scalars = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: scalars, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unterminated escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        // A high surrogate must be followed by an escaped low one.
                        guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                        else { throw error("lone surrogate") }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw error("invalid surrogate pair") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw error("lone surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("invalid code point") }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default: throw error("unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw error("control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw error("unterminated string")
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error("truncated \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("bad hex digit")
            }
            code = code << 4 | UInt32(digit)
            index += 1
        }
        return code
    }

    /// RFC 8259 number grammar; integers up to 15 digits are built exactly without a string.
    mutating func number() throws(JSONParseError) -> Double {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("bad number") }
        var integer: Int64 = 0
        var digits = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                if digits < 18 { integer = integer * 10 + Int64(bytes[index] - UInt8(ascii: "0")) }
                digits += 1
                index += 1
            }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("bad fraction") }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else { throw error("bad exponent") }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if isInteger, digits <= 15 { return Double(negative ? -integer : integer) }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let value = Double(text), value.isFinite else { throw error("number out of range") }
        return value
    }
}
