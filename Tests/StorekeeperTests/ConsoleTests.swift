import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import JobQueue
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// The console over real HTTP, attacked as a browser would be: sessions, CSRF, roles, lockout,
/// escaping, and the figures it shows equal to the API's. `scripts/console-check.sh` drives the
/// same pages in a real browser.
@Suite("console: sign-in, sessions, CSRF, roles, escaping; figures as the API answers them")
struct ConsoleTests {
    static let readerPassword = "correct horse battery staple"

    /// A browser's cookie jar over a client that does not follow redirects.
    final class Browser: @unchecked Sendable {
        let http: HTTPJSONClient
        var cookies: [String: String] = [:]

        init(_ client: HTTPClient, baseURL: String) { http = HTTPJSONClient(httpClient: client, baseURL: baseURL) }

        func get(_ path: String) async throws -> HTTPJSONClient.Reply {
            remember(try await http.send(.GET, path, headers: header))
        }

        func post(_ path: String, _ form: [String: String]) async throws -> HTTPJSONClient.Reply {
            let body = form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }
                .joined(separator: "&")
            var headers = header
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            return remember(try await http.send(.POST, path, headers: headers, body: Data(body.utf8)))
        }

        var header: [String: String] {
            cookies.isEmpty ? [:] : ["Cookie": cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")]
        }

        func remember(_ reply: HTTPJSONClient.Reply) -> HTTPJSONClient.Reply {
            for line in reply.setCookies {
                let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { continue }
                cookies[pair[0]] = pair[1].isEmpty ? nil : pair[1]
            }
            return reply
        }

        /// The hidden CSRF field of the page's first form.
        static func csrf(_ page: HTTPJSONClient.Reply) -> String? {
            guard let range = page.text.range(of: #"name="csrf" value=""#) else { return nil }
            return String(page.text[range.upperBound...].prefix { $0 != "\"" })
        }

        func signIn(account: String, password: String) async throws -> HTTPJSONClient.Reply {
            let form = try await get("/console/login")
            return try await post("/console/login", ["csrf": Self.csrf(form) ?? "", "account": account, "password": password])
        }
    }

    static func withConsole(_ body: (LocalStack, HTTPClient) async throws -> Void) async throws {
        let entry = "reader:read_only:" + (try ConsoleSettings.hashPassword(readerPassword))
        try await withStack(configure: {
            $0.notificationGapFill.enabled = false
            $0.console.operators = [entry]
            // A verification that fails once waits ten minutes: long past the test.
            $0.retry = RetryPolicy(base: 600, cap: 600, jitter: 0)
        }) { stack in
            var configuration = HTTPClient.Configuration()
            configuration.redirectConfiguration = .disallow
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                try await body(stack, client)
            } catch {
                try await client.shutdown()
                throw error
            }
            try await client.shutdown()
        }
    }

    @Test("signed out: pages send to sign-in; a forged, tampered or signed-out cookie is no session; headers forbid script and framing")
    func signedOut() async throws {
        try await Self.withConsole { stack, client in
            let browser = Browser(client, baseURL: stack.api.http.baseURL)
            for path in ["/console", "/console/apps/demo", "/console/verifications", "/console/apps/demo/customers/alice"] {
                let reply = try await browser.get(path)
                #expect(reply.status == 303 && reply.headers["location"] == "/console/login", "\(path)")
            }
            let login = try await browser.get("/console/login")
            #expect(login.status == 200 && login.text.contains("<form method=\"post\" action=\"/console/login\""))
            let policy = login.headers["content-security-policy"] ?? ""
            #expect(policy.contains("default-src 'none'") && !policy.contains("script-src") && policy.contains("frame-ancestors 'none'"))
            #expect(!login.text.contains("<script") && !login.text.contains("style="))
            #expect(login.setCookies.first?.contains("HttpOnly") == true && login.setCookies.first?.contains("SameSite=Strict") == true)

            let signedIn = try await browser.signIn(account: "", password: stack.api.adminKey)
            #expect(signedIn.status == 303 && signedIn.headers["location"] == "/console")
            let cookie = try #require(signedIn.setCookies.first { $0.hasPrefix("storekeeper_console=") })
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console"))
            #expect(try await browser.get("/console/apps/demo").status == 200)
            // The admin key never appears on a page.
            #expect(!(try await browser.get("/console/apps/demo").text.contains(stack.api.adminKey)))

            // Tampered: a payload that claims more, with the old signature.
            let value = try #require(browser.cookies["storekeeper_console"])
            let parts = value.split(separator: ".").map(String.init)
            let forged = Browser(client, baseURL: stack.api.http.baseURL)
            forged.cookies["storekeeper_console"] = parts[0] + "x." + parts[1]
            #expect(try await forged.get("/console/apps/demo").status == 303)
            forged.cookies["storekeeper_console"] = "e30." + parts[1]
            #expect(try await forged.get("/console/apps/demo").status == 303)

            // Signed out: the same cookie, replayed, is refused.
            let page = try await browser.get("/console/apps/demo")
            let out = try await browser.post("/console/logout", ["csrf": Browser.csrf(page) ?? ""])
            #expect(out.status == 303 && out.headers["location"] == "/console/login")
            let replay = Browser(client, baseURL: stack.api.http.baseURL)
            replay.cookies["storekeeper_console"] = value
            #expect(try await replay.get("/console/apps/demo").status == 303)
        }
    }

    @Test("sign-in: a form without the CSRF cookie's token is refused; five wrong passwords lock the account, not the others")
    func signInAttacks() async throws {
        try await Self.withConsole { stack, client in
            let browser = Browser(client, baseURL: stack.api.http.baseURL)
            _ = try await browser.get("/console/login")
            // Posted from elsewhere: the token is missing or is not this browser's.
            #expect(try await browser.post("/console/login", ["account": "", "password": stack.api.adminKey]).status == 403)
            #expect(try await browser.post("/console/login", ["csrf": "guess", "account": "", "password": stack.api.adminKey]).status == 403)
            let stranger = Browser(client, baseURL: stack.api.http.baseURL)
            let theirs = try await stranger.get("/console/login")
            #expect(
                try await browser.post("/console/login", ["csrf": Browser.csrf(theirs) ?? "", "account": "", "password": stack.api.adminKey]).status
                    == 403)

            for _ in 0..<5 {
                #expect(try await browser.signIn(account: "reader", password: "wrong").status == 401)
            }
            // Locked now, even with the right password; the admin key is another account.
            let locked = try await browser.signIn(account: "reader", password: Self.readerPassword)
            #expect(locked.status == 429 && locked.text.contains("Too many failed sign-ins"))
            #expect(try await browser.signIn(account: "", password: stack.api.adminKey).status == 303)
            // An unknown operator is told exactly what a wrong password is told.
            let unknown = try await Browser(client, baseURL: stack.api.http.baseURL).signIn(account: "mallory", password: "x")
            #expect(unknown.status == 401 && unknown.text.contains("Unknown operator or wrong password."))
        }
    }

    @Test("a stuck verification: the admin's retry without a token is refused, a read-only operator's is refused, the admin's requeues it")
    func retryAndRoles() async throws {
        try await Self.withConsole { stack, client in
            try await stack.simulator.setFaults(
                {
                    var faults = FaultConfiguration()
                    faults.http503Rate = 1
                    return faults
                }())
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let receipt = try await stack.simulator.purchase(device: device, productId: "com.example.removeads").receipt
            let posted = try await stack.api.postReceipt(appUserId: "stuck", receipt: receipt)
            let id = try #require(posted.json["id"] as? String, "\(posted.text)")
            #expect(try await eventually { try await stack.api.verification(id).json["state"] as? String == "retry_scheduled" })
            try await stack.simulator.setFaults(FaultConfiguration.none)

            let reader = Browser(client, baseURL: stack.api.http.baseURL)
            #expect(try await reader.signIn(account: "reader", password: Self.readerPassword).status == 303)
            let readerPage = try await reader.get("/console/verifications?state=retry_scheduled")
            #expect(readerPage.text.contains(id) && !readerPage.text.contains("class=\"retry\""), "a read-only operator sees no action")
            let readerRetry = try await reader.post("/console/verifications/\(id)/retry", ["csrf": Browser.csrf(readerPage) ?? ""])
            #expect(readerRetry.status == 403 && readerRetry.text.contains("may look but not act"))

            let admin = Browser(client, baseURL: stack.api.http.baseURL)
            #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)
            let page = try await admin.get("/console/verifications?state=retry_scheduled")
            #expect(page.text.contains("class=\"retry\""))
            #expect(try await admin.post("/console/verifications/\(id)/retry", [:]).status == 403)
            #expect(try await admin.post("/console/verifications/\(id)/retry", ["csrf": "forged"]).status == 403)
            // Another session's token is not this one's.
            #expect(try await admin.post("/console/verifications/\(id)/retry", ["csrf": Browser.csrf(readerPage) ?? ""]).status == 403)
            #expect(try await stack.api.verification(id).json["state"] as? String == "retry_scheduled", "nothing was done")

            let retried = try await admin.post("/console/verifications/\(id)/retry", ["csrf": Browser.csrf(page) ?? ""])
            #expect(retried.status == 303 && retried.headers["location"]?.hasPrefix("/console/verifications?done=requeued") == true)
            #expect(try await stack.api.waitForFinal(id)["state"] as? String == "verified")
            let after = try await admin.get(try #require(retried.headers["location"]))
            #expect(after.text.contains("was requeued") && after.text.contains(id))
        }
    }

    @Test("an HTML-injection user id renders as text everywhere; the overview shows the API's figures; search finds by id and app transaction id")
    func escapingAndFigures() async throws {
        try await Self.withConsole { stack, client in
            let hostile = "<script>alert(1)</script>\"'&"
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: hostile, signedTransaction: bought.signedTransaction, wait: 30).status == 200)
            let admin = Browser(client, baseURL: stack.api.http.baseURL)
            #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)

            let encoded = try #require(hostile.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
            let customer = try await admin.get("/console/apps/demo/customers/\(encoded)")
            #expect(customer.status == 200)
            #expect(!customer.text.contains("<script>") && customer.text.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
            #expect(customer.text.contains("com.example.pro.monthly") && customer.text.contains("4.99 USD"))
            let search = try await admin.get("/console/apps/demo/customers?q=\(encoded)")
            #expect(!search.text.contains("<script>") && search.text.contains("id=\"results\""))
            let none = try await admin.get("/console/apps/demo/customers?q=nobody")
            #expect(none.text.contains("id=\"no-results\""))

            // The overview's figures are the API's.
            let api = try await stack.api.http.send(
                .GET, "/v1/admin/apps/demo/metrics/subscriptions", headers: ["Authorization": "Bearer \(stack.api.adminKey)"])
            let snapshot = (api.json["current"] as? [String: Any])?["snapshot"] as? [String: Any]
            let overview = try await admin.get("/console/apps/demo")
            #expect(overview.text.contains("<dd id=\"active-subscriptions\">\(snapshot?["activeSubscriptions"] as? Int ?? -1)</dd>"))
            let mrr = (snapshot?["mrr"] as? [[String: Any]])?.first
            #expect(overview.text.contains("data-currency=\"USD\" data-micros=\"\((mrr?["micros"] as? NSNumber)?.int64Value ?? -1)\""))
            #expect(overview.text.contains("<svg class=\"chart\""))
            // A malformed range is a page with the API's status, not a crash.
            #expect(try await admin.get("/console/apps/demo?interval=hour").status == 400)
            #expect(try await admin.get("/console/apps/nope").status == 404)
        }
    }
}
