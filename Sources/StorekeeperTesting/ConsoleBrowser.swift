import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// The console as a browser sees it, minus the rendering: a cookie jar over a client that does not
/// follow redirects (a sign-in's cookie comes with its 303), and the forms' CSRF fields. For the
/// console's tests and its benchmark; `scripts/console-check.sh` drives a real browser.
public final class ConsoleBrowser: @unchecked Sendable {
    public let http: HTTPJSONClient
    private let client: HTTPClient
    private let lock = NSLock()
    private var jar: [String: String] = [:]

    public init(baseURL: String) {
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        // Dropped before the server's idle timeout closes them (`LocalStack.clientIdleSeconds`).
        configuration.connectionPool = .init(idleTimeout: .seconds(LocalStack.clientIdleSeconds))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        http = HTTPJSONClient(httpClient: client, baseURL: baseURL)
    }

    /// The cookies this browser holds, by name.
    public var cookies: [String: String] {
        get { lock.withLock { jar } }
        set { lock.withLock { jar = newValue } }
    }

    public func get(_ path: String, headers: [String: String] = [:]) async throws -> HTTPJSONClient.Reply {
        remember(try await http.send(.GET, path, headers: cookieHeader.merging(headers) { _, given in given }))
    }

    /// Posts a form (`application/x-www-form-urlencoded`).
    public func post(_ path: String, _ form: [String: String]) async throws -> HTTPJSONClient.Reply {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        let body = form.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
        var headers = cookieHeader
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        return remember(try await http.send(.POST, path, headers: headers, body: Data(body.utf8)))
    }

    /// Opens the sign-in page and signs in with its token.
    public func signIn(account: String, password: String) async throws -> HTTPJSONClient.Reply {
        let form = try await get("/console/login")
        return try await post("/console/login", ["csrf": Self.csrf(form) ?? "", "account": account, "password": password])
    }

    /// The hidden CSRF field of the page's first form.
    public static func csrf(_ page: HTTPJSONClient.Reply) -> String? {
        guard let range = page.text.range(of: #"name="csrf" value=""#) else { return nil }
        return String(page.text[range.upperBound...].prefix { $0 != "\"" })
    }

    public func shutdown() async throws {
        try await client.shutdown()
    }

    private var cookieHeader: [String: String] {
        let cookies = self.cookies
        return cookies.isEmpty ? [:] : ["Cookie": cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")]
    }

    private func remember(_ reply: HTTPJSONClient.Reply) -> HTTPJSONClient.Reply {
        lock.withLock {
            for line in reply.setCookies {
                let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                jar[pair[0]] = pair[1].isEmpty ? nil : pair[1]
            }
        }
        return reply
    }
}
