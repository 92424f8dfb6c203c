import Foundation
import NIOHTTP1
import StorekeeperServer
import StorekeeperTesting
import StorekeeperWire
import Testing

/// Every route the server registers, with the credential it must need, from tables written apart
/// from the server (the API's in the wire module's `APIRoute.all`, the console's here): a route
/// added without a credential, or with another one than its row's, fails this test until the
/// table says what it needs (docs/SECURITY.md).
@Suite("every route needs the credential its table row names")
struct RouteCredentialTests {
    enum Credential: String {
        /// Anyone: the probe, metrics, the console's sign-in.
        case open
        /// No key: the body must be signed by Apple (notifications, retention requests).
        case appleSigned
        /// The app's secret key (its backend); a client key is refused.
        case backend
        /// The app's secret key, or its client key with the user's token.
        case caller
        /// An operator's session cookie.
        case console
        /// The admin key or an admin token (every route under /v1/admin, guarded by `AdminGate`).
        case admin
    }

    /// The console's routes (HTML, not the API), as "METHOD /path/{capture}".
    static let table: [String: Credential] = [
        "GET /healthz": .open,
        "GET /metrics": .open,
        // The console: its sign-in and stylesheet are open; every page and form needs a session.
        "GET /console/login": .open,
        "POST /console/login": .open,
        "GET /console/static/console.css": .open,
        "POST /console/logout": .console,
        "GET /console": .console,
        "GET /console/health": .console,
        "GET /console/verifications": .console,
        "POST /console/verifications/{id}/retry": .console,
        "GET /console/apps/{app}": .console,
        "GET /console/apps/{app}/customers": .console,
        "GET /console/apps/{app}/customers/{id}": .console,
        "POST /console/apps/{app}/customers/{id}/promotional-grants": .console,
        "POST /console/apps/{app}/customers/{id}/refresh": .console,
        "POST /console/apps/{app}/promotional-grants/{grantId}/revoke": .console,
        "GET /console/apps/{app}/ledger": .console,
        "GET /console/apps/{app}/ledger.csv": .console,
        "GET /console/apps/{app}/ledger.json": .console,
        "GET /console/apps/{app}/webhooks": .console,
        "POST /console/apps/{app}/webhooks/{endpoint}/replay": .console,
        "POST /console/apps/{app}/webhooks/{endpoint}/skip": .console,
    ]

    /// The API's routes from the wire module's table (checked against docs/openapi.yaml in
    /// `RouteTableTests`), by method and path with the captures' names left out: the server
    /// names some captures otherwise than the document.
    static let api: [String: Credential] = Dictionary(
        APIRoute.all.map { (shape($0.method, $0.path), Credential(rawValue: $0.access.rawValue)!) }, uniquingKeysWith: { first, _ in first })

    static func shape(_ method: String, _ path: String) -> String {
        method + " " + path.split(separator: "/").map { $0.hasPrefix("{") ? "{}" : String($0) }.joined(separator: "/")
    }

    static func credential(_ route: RegisteredRoute) -> Credential? {
        table[route.description] ?? api[shape(route.method, route.path)]
    }

    /// A concrete path for a pattern: every capture a made-up id.
    static func path(_ pattern: String) -> String {
        pattern.split(separator: "/").map { $0.hasPrefix("{") ? "zz_\($0.dropFirst().dropLast())" : String($0) }
            .reduce("") { $0 + "/" + $1 }
    }

    @Test("the table names every registered route and nothing else; each refuses a caller without its credential")
    func everyRoute() async throws {
        try await withStack { stack in
            let routes = stack.routes.routes
            #expect(routes.count > 100, "\(routes.count) routes")
            let unlisted = routes.filter { Self.credential($0) == nil }.map(\.description)
            #expect(unlisted.isEmpty, "routes without a credential in the table:\n\(unlisted.joined(separator: "\n"))")
            let registered = Set(routes.map(\.description))
            let stale = Self.table.keys.filter { !registered.contains($0) }.sorted()
            #expect(stale.isEmpty, "table rows without a route: \(stale)")
            let shapes = Set(routes.map { Self.shape($0.method, $0.path) })
            let undocumented = Self.api.keys.filter { !shapes.contains($0) }.sorted()
            #expect(undocumented.isEmpty, "routes in the wire table the server does not register: \(undocumented)")

            let http = stack.api.http
            // The console answers a page asked without a session with a redirect to its sign-in:
            // asked by a client that does not follow it.
            let browser = ConsoleBrowser(baseURL: try #require(stack.serverURL))
            defer { Task { try? await browser.shutdown() } }
            let clientKey = try #require(stack.configuration.apps[0].client?.key)
            var checked: [Credential: Int] = [:]
            for route in routes {
                guard let credential = Self.credential(route) else { continue }
                let method = HTTPMethod(rawValue: route.method)
                let path = Self.path(route.path)
                let bare = try await http.send(method, path, body: Data("{}".utf8))
                switch credential {
                case .open, .appleSigned:
                    // Open to anyone; what the body must hold (a signature, the sign-in form's
                    // token) is that route's own check.
                    #expect(bare.status != 401, "\(route): \(bare.status) \(bare.text)")
                case .backend, .caller, .admin:
                    #expect(bare.status == 401 && bare.errorCode == "unauthorized", "\(route) without a key: \(bare.status) \(bare.text)")
                case .console:
                    let page = route.method == "GET" ? try await browser.get(path) : try await browser.post(path, ["csrf": "forged"])
                    #expect(
                        page.status == 303 && page.headers["location"]?.hasSuffix("/console/login") == true,
                        "\(route) without a session: \(page.status) \(page.text.prefix(200))")
                }
                if credential == .backend {
                    let client = try await http.send(method, path, headers: ["Authorization": "Bearer \(clientKey)"], body: Data("{}".utf8))
                    #expect(client.status == 403 && client.errorCode == "client_key_not_allowed", "\(route) with the client key: \(client.text)")
                }
                if credential == .admin {
                    let app = try await http.send(
                        method, path, headers: ["Authorization": "Bearer \(stack.api.apiKey)"], body: Data("{}".utf8))
                    #expect(app.status == 401, "\(route) with the app's key: \(app.status) \(app.text)")
                }
                checked[credential, default: 0] += 1
            }
            #expect(checked[.admin, default: 0] >= 70 && checked[.backend, default: 0] == 2 && checked[.caller, default: 0] == 15, "\(checked)")
        }
    }
}
