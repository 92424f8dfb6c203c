import Foundation
import StorekeeperWire
import Testing

/// The wire contract against docs/openapi.yaml, without a server: what the server answers with
/// and the SDK reads (`StorekeeperWire`) is what the document promises. Schemathesis then judges
/// behaviour, not the list.
@Suite("wire contract: the shared types against the API document")
struct WireContractTests {
    /// The `ErrorCode` schema's enum, each value with the status its comment states (`# 409: …`).
    static func documentedErrorCodes() throws -> [String: Int] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/openapi.yaml")
        let text = try String(contentsOf: url, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0 == "    ErrorCode:" }) else { throw Missing(what: "the ErrorCode schema") }
        guard let list = lines[start...].firstIndex(where: { $0.trimmingCharacters(in: .whitespaces) == "enum:" }) else {
            throw Missing(what: "the ErrorCode enum")
        }
        var codes: [String: Int] = [:]
        for line in lines[(list + 1)...] {
            let item = line.trimmingCharacters(in: .whitespaces)
            if item.isEmpty { continue }
            guard item.hasPrefix("- ") else { break }
            let parts = item.dropFirst(2).split(separator: "#", maxSplits: 1)
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            let status = parts.count > 1 ? Int(parts[1].trimmingCharacters(in: .whitespaces).prefix(3)) : nil
            codes[name] = status ?? 0
        }
        return codes
    }

    struct Missing: Error { var what: String }

    @Test("every error code the server answers with is in the document's ErrorCode enum with its status, and nothing else is")
    func errorCodes() throws {
        let documented = try Self.documentedErrorCodes()
        let shared = Dictionary(uniqueKeysWithValues: ErrorCode.all.map { ($0.rawValue, $0.httpStatus) })
        #expect(Set(shared.keys).subtracting(documented.keys).sorted() == [], "answered but not documented")
        #expect(Set(documented.keys).subtracting(shared.keys).sorted() == [], "documented but never answered")
        for (name, status) in shared.sorted(by: { $0.key < $1.key }) where documented[name] != nil {
            #expect(documented[name] == status, "\(name): the document says \(documented[name] ?? 0), the server answers \(status)")
        }
    }

    @Test("a code a newer server sends decodes, with no status; a known one keeps its status through JSON")
    func openSet() throws {
        let decoded = try JSONDecoder().decode([ErrorCode].self, from: Data(#"["rate_limited", "from_the_future"]"#.utf8))
        #expect(decoded.map(\.httpStatus) == [429, 0] && decoded[0] == .rateLimited && decoded[1].rawValue == "from_the_future")
        #expect(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self) == #"["rate_limited","from_the_future"]"#)
    }

    @Test("the error body the server writes is the one the SDK reads: code, message, and a balance only where one is given")
    func errorBody() throws {
        // Keys in any order (JSONEncoder's is not fixed): the fields, and no others.
        func fields(_ data: Data) throws -> [String: String] {
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: [String: Any]])
            #expect(Array(object.keys) == ["error"])
            return try #require(object["error"]).mapValues { "\($0)" }
        }
        let written = try JSONEncoder().encode(ErrorBody(code: .insufficientCredits, message: "balance 3", balance: 3))
        #expect(try fields(written) == ["code": "insufficient_credits", "message": "balance 3", "balance": "3"])
        let plain = try JSONEncoder().encode(ErrorBody(code: .notFound, message: "no such verification"))
        #expect(try fields(plain) == ["code": "not_found", "message": "no such verification"])
        let read = try JSONDecoder().decode(ErrorBody.self, from: written)
        #expect(read.error.code == .insufficientCredits && read.error.code.httpStatus == 409 && read.error.balance == 3)
    }
}
