import StorekeeperWire
import Testing

/// The wire module's route table against docs/openapi.yaml, with no server: every documented
/// operation is a row with the credential its `security` names, and every row is documented.
/// (`RouteCredentialTests` holds the running server's routes against the same table.)
@Suite("wire contract: the route table against the API document")
struct RouteTableTests {
    static let methods = ["get", "post", "put", "patch", "delete"]

    /// The credential an operation's `security` list names.
    static func access(_ security: Any?, path: String) -> APIRoute.Access? {
        let schemes = Set((security as? [Any] ?? []).compactMap { ($0 as? [String: Any])?.keys.first })
        if schemes.contains("adminBearer") { return .admin }
        if schemes.contains("clientBearer") { return .caller }
        if schemes.contains("appBearer") { return .backend }
        guard schemes.isEmpty else { return nil }
        // No key: Apple's routes are open to anyone, and their bodies must carry Apple's signature.
        return ["/v1/notifications/appstore", "/v1/retention/{app}"].contains(path) ? .appleSigned : .open
    }

    @Test("every documented operation is in the table with the credential its security names, and every row is documented")
    func tableIsTheDocument() throws {
        let document = try APIDocument.load()
        let paths = try #require(document.root["paths"] as? [String: Any])
        var documented: [String: APIRoute.Access?] = [:]
        for (path, item) in paths {
            for (method, operation) in item as? [String: Any] ?? [:] where Self.methods.contains(method) {
                documented["\(method.uppercased()) \(path)"] = Self.access((operation as? [String: Any])?["security"], path: path)
            }
        }
        let table = Dictionary(APIRoute.all.map { ($0.description, $0.access) }, uniquingKeysWith: { first, _ in first })
        #expect(table.count == APIRoute.all.count, "a row twice")
        #expect(Set(documented.keys).subtracting(table.keys).sorted() == [], "documented, not in the table")
        #expect(Set(table.keys).subtracting(documented.keys).sorted() == [], "in the table, not documented")
        for (route, access) in table.sorted(by: { $0.key < $1.key }) where documented[route] != nil {
            #expect(documented[route] == access, "\(route): the document says \(String(describing: documented[route] ?? nil))")
        }
        #expect(APIRoute.all.filter { $0.access == .admin }.count >= 70)
    }
}
