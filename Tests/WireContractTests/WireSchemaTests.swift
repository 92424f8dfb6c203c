import Foundation
import StorekeeperWire
import Testing
import WireSamples

/// Every message the server and the SDK exchange through `StorekeeperWire`, encoded as the server
/// encodes it and held against docs/openapi.yaml, with no server running.
@Suite("wire contract: every shared message against its schema in the API document")
struct WireSchemaTests {
    static func encoded(_ message: any WireMessage) throws -> JSONInstance {
        try JSONDecoder().decode(JSONInstance.self, from: try WireJSON.makeEncoder().encode(message))
    }

    @Test("each sample conforms to the schema its type names")
    func samplesConform() throws {
        let document = try APIDocument.load()
        for sample in WireSamples.all {
            let location = type(of: sample).location
            let problems = document.problems(try Self.encoded(sample), against: try document.schema(at: location))
            #expect(problems == [], "\(type(of: sample)) at \(location)")
        }
    }

    @Test("each sample survives a round trip through the reader's decoder")
    func samplesRoundTrip() throws {
        // Through the bytes: a `Date` read back may differ from the written one below the millisecond.
        func roundTrip<M: WireMessage>(_ message: M) throws -> Bool {
            let written = try WireJSON.makeEncoder().encode(message)
            return try WireJSON.makeEncoder().encode(WireJSON.makeDecoder().decode(M.self, from: written)) == written
        }
        for sample in WireSamples.all {
            #expect(try roundTrip(sample), "\(type(of: sample))")
        }
    }

    /// The check must be able to fail: each sample with one required field taken away, and with
    /// a field nobody declared, is refused wherever the schema says so.
    @Test("the check refuses a sample missing a required field or carrying an undeclared one")
    func checkCanFail() throws {
        let document = try APIDocument.load()
        var refusedMissing = 0
        var open: Set<String> = []
        for sample in WireSamples.all {
            let schema = try document.schema(at: type(of: sample).location)
            guard case .object(let fields) = try Self.encoded(sample) else { continue }
            for name in fields.keys.sorted() {
                var fewer = fields
                fewer[name] = nil
                let required = Self.required(schema, document: document)
                if required.contains(name) {
                    #expect(document.problems(.object(fewer), against: schema) != [], "\(type(of: sample)) without \(name)")
                    refusedMissing += 1
                }
            }
            var more = fields
            more["notInTheDocument"] = .string("x")
            if document.problems(.object(more), against: schema).isEmpty { open.insert(String(describing: type(of: sample))) }
        }
        #expect(refusedMissing >= WireSamples.all.count, "every sample has a required field taken away at least once")
        // The server reads the bodies of signed transactions and app transactions leniently (a
        // field it does not know is ignored), and the document's `Product` is a request body too;
        // every other shared message is a closed object.
        #expect(open == ["AppTransactionSubmission", "CatalogProduct", "SignedTransactionSubmission"])
    }

    private static func required(_ schema: Any, document: APIDocument) -> Set<String> {
        guard let mapping = schema as? [String: Any] else { return [] }
        if let reference = mapping["$ref"] as? String, let target = try? document.resolve(reference) {
            return required(target, document: document)
        }
        return Set(mapping["required"] as? [String] ?? [])
    }

    /// A message type added to the module without a sample would go unchecked: the module's
    /// sources are read for every `WireMessage` conformance.
    @Test("every WireMessage type in StorekeeperWire has a sample")
    func everyMessageHasASample() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../StorekeeperKit/Sources/StorekeeperWire")
        var declared: Set<String> = []
        let expression = try NSRegularExpression(pattern: #"(?:struct|extension) (?:\w+\.)*(\w+): WireMessage\b"#)
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".swift") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in expression.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                declared.insert(String(text[Range(match.range(at: 1), in: text)!]))
            }
        }
        let sampled = Set(WireSamples.all.map { String(describing: type(of: $0)).split(separator: ".").last.map(String.init) ?? "" })
        #expect(declared.count >= 10)
        #expect(declared.subtracting(sampled).sorted() == [], "declared without a sample")
    }

    @Test("every schema in the document uses only keywords the checker reads (a comma in a flow mapping splits a description into one)")
    func documentKeywords() throws {
        #expect(try APIDocument.load().unknownKeywords() == [])
    }

    /// The checker itself, on values whose verdict is known.
    @Test("the checker: types, enums, patterns, formats, nullable lists and references")
    func checker() throws {
        let document = try APIDocument.load()
        let state = try document.resolve("#/components/schemas/VerificationState")
        #expect(document.problems(.string("verified"), against: state) == [])
        #expect(document.problems(.string("granted"), against: state) != [])
        #expect(document.problems(.integer(1), against: ["type": "boolean"]) != [])
        #expect(document.problems(.bool(true), against: ["type": "integer"]) != [])
        #expect(document.problems(.null, against: ["type": ["string", "null"]]) == [])
        #expect(document.problems(.string("2026-11-29T01:02:03.004Z"), against: ["type": "string", "format": "date-time"]) == [])
        #expect(document.problems(.string("yesterday"), against: ["type": "string", "format": "date-time"]) != [])
        #expect(document.problems(.string("x"), against: ["type": "string", "notAKeyword": 1]) != [], "an unknown keyword fails")
    }
}
