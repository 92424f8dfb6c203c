/// One BER element (X.690): where its contents lie in the bytes it was read from. Reading an
/// element costs its header alone; children are read on demand, so a receipt's certificates
/// are skipped by their length rather than walked node by node.
struct BERElement: Sendable {
    /// The identifier's first octet: class (bits 8-7), constructed (bit 6), tag number (bits 5-1).
    var identifier: UInt8
    /// Start of the identifier octet, and the end of the whole element (end-of-contents included).
    var start: Int
    var end: Int
    /// The contents: for indefinite lengths, up to (not including) the end-of-contents octets.
    var contents: Range<Int>

    var isConstructed: Bool { identifier & 0x20 != 0 }
    /// The tag without the constructed bit, to compare with the constants below.
    var tag: UInt8 { identifier & ~0x20 }

    static let integer: UInt8 = 0x02
    static let octetString: UInt8 = 0x04
    static let objectIdentifier: UInt8 = 0x06
    static let utf8String: UInt8 = 0x0C
    static let sequence: UInt8 = 0x10
    static let set: UInt8 = 0x11
    static let ia5String: UInt8 = 0x16
    /// `[0]` in context-specific class.
    static let context0: UInt8 = 0x80
}

/// Why BER bytes could not be read.
struct BERError: Error, Sendable, CustomStringConvertible {
    var offset: Int
    var reason: String
    var description: String { "BER at byte \(offset): \(reason)" }
}

/// Reads BER as Apple's receipts use it: definite and indefinite lengths, constructed strings,
/// single-octet tags. Every length is checked against the bytes present, and nesting is bounded
/// by `maximumDepth`, so hostile input costs at most linear time and bounded stack.
struct BERReader {
    let bytes: [UInt8]
    var maximumDepth = 32

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The element starting at `offset`.
    func element(at offset: Int, depth: Int = 0) throws(BERError) -> BERElement {
        guard depth <= maximumDepth else { throw BERError(offset: offset, reason: "nested too deep") }
        guard offset + 2 <= bytes.count else { throw BERError(offset: offset, reason: "truncated header") }
        let identifier = bytes[offset]
        guard identifier & 0x1F != 0x1F else { throw BERError(offset: offset, reason: "multi-octet tags are not used here") }
        var index = offset + 1
        let first = bytes[index]
        index += 1
        if first == 0x80 {
            // Indefinite length: constructed only; the contents run to the matching 00 00.
            guard identifier & 0x20 != 0 else { throw BERError(offset: offset, reason: "indefinite length on a primitive") }
            var cursor = index
            while true {
                guard cursor + 2 <= bytes.count else { throw BERError(offset: cursor, reason: "no end-of-contents") }
                if bytes[cursor] == 0, bytes[cursor + 1] == 0 {
                    return BERElement(identifier: identifier, start: offset, end: cursor + 2, contents: index..<cursor)
                }
                cursor = try element(at: cursor, depth: depth + 1).end
            }
        }
        var length = 0
        if first & 0x80 == 0 {
            length = Int(first)
        } else {
            let count = Int(first & 0x7F)
            guard count <= 4, index + count <= bytes.count else { throw BERError(offset: offset, reason: "bad length") }
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard length <= bytes.count - index else { throw BERError(offset: offset, reason: "length beyond the input") }
        return BERElement(identifier: identifier, start: offset, end: index + length, contents: index..<(index + length))
    }

    /// The elements inside a constructed element (or a whole input when `in` is nil).
    func children(of parent: BERElement, depth: Int = 0) throws(BERError) -> [BERElement] {
        guard parent.isConstructed else { throw BERError(offset: parent.start, reason: "expected a constructed element") }
        var result: [BERElement] = []
        var cursor = parent.contents.lowerBound
        while cursor < parent.contents.upperBound {
            let child = try element(at: cursor, depth: depth + 1)
            guard child.end <= parent.contents.upperBound else { throw BERError(offset: cursor, reason: "child overruns its parent") }
            result.append(child)
            cursor = child.end
        }
        return result
    }

    /// Each element inside a constructed element, in order, without gathering them: a receipt's
    /// attribute set is read once per purchase, and an array per set and per attribute was most
    /// of the parse's allocations (docs/BENCHMARKS.md, "App receipts").
    func forEachChild(of parent: BERElement, depth: Int = 0, _ body: (BERElement) throws -> Void) throws {
        guard parent.isConstructed else { throw BERError(offset: parent.start, reason: "expected a constructed element") }
        var cursor = parent.contents.lowerBound
        while cursor < parent.contents.upperBound {
            let child = try element(at: cursor, depth: depth + 1)
            guard child.end <= parent.contents.upperBound else { throw BERError(offset: cursor, reason: "child overruns its parent") }
            try body(child)
            cursor = child.end
        }
    }

    /// The children of `parent`, which must carry `tag`.
    func children(of parent: BERElement, tag: UInt8) throws(BERError) -> [BERElement] {
        guard parent.tag == tag else { throw BERError(offset: parent.start, reason: "expected tag \(tag), found \(parent.tag)") }
        return try children(of: parent)
    }

    /// A string-like value (OCTET STRING, UTF8String, IA5String): primitive contents, or the
    /// concatenated segments of a constructed (BER) encoding.
    func stringBytes(_ element: BERElement, depth: Int = 0) throws(BERError) -> ArraySlice<UInt8> {
        guard element.isConstructed else { return bytes[element.contents] }
        var joined: [UInt8] = []
        for segment in try children(of: element, depth: depth) {
            guard segment.tag == element.tag || segment.tag == BERElement.octetString else {
                throw BERError(offset: segment.start, reason: "mixed segments in a constructed string")
            }
            joined += try stringBytes(segment, depth: depth + 1)
        }
        return joined[...]
    }

    /// An INTEGER that fits in 64 bits (two's complement, minimal or not).
    func integer(_ element: BERElement) throws(BERError) -> Int64 {
        guard element.tag == BERElement.integer, !element.isConstructed, !element.contents.isEmpty else {
            throw BERError(offset: element.start, reason: "expected an INTEGER")
        }
        var contents = bytes[element.contents]
        // Sign padding does not count against the 64 bits.
        while contents.count > 8, let first = contents.first, first == 0x00 || first == 0xFF, contents.count > 1 {
            let next = contents[contents.index(after: contents.startIndex)]
            guard (first == 0x00 && next & 0x80 == 0) || (first == 0xFF && next & 0x80 != 0) else { break }
            contents = contents.dropFirst()
        }
        guard contents.count <= 8 else { throw BERError(offset: element.start, reason: "INTEGER wider than 64 bits") }
        var value: Int64 = contents.first! & 0x80 != 0 ? -1 : 0
        for byte in contents { value = value << 8 | Int64(byte) }
        return value
    }
}
