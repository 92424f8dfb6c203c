import AppStoreSimulator
import AsyncHTTPClient
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorekeeperCore
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

    typealias Browser = ConsoleBrowser

    /// The browsers a test opens, each shut down at its end.
    final class Browsers: @unchecked Sendable {
        let baseURL: String
        private let lock = NSLock()
        private var opened: [ConsoleBrowser] = []

        init(baseURL: String) { self.baseURL = baseURL }

        func open() -> ConsoleBrowser {
            let browser = ConsoleBrowser(baseURL: baseURL)
            lock.withLock { opened.append(browser) }
            return browser
        }

        func close() async throws {
            for browser in lock.withLock({ opened }) { try await browser.shutdown() }
        }
    }

    static func withConsole(_ body: (LocalStack, () -> ConsoleBrowser) async throws -> Void) async throws {
        let entry = "reader:read_only:" + (try ConsoleSettings.hashPassword(readerPassword))
        try await withStack(configure: {
            $0.notificationGapFill.enabled = false
            $0.console.operators = [entry]
            // A verification that fails once waits ten minutes: long past the test.
            $0.retry = RetryPolicy(base: 600, cap: 600, jitter: 0)
        }) { stack in
            let browsers = Browsers(baseURL: stack.api.http.baseURL)
            do {
                try await body(stack, browsers.open)
            } catch {
                try await browsers.close()
                throw error
            }
            try await browsers.close()
        }
    }

    @Test("signed out: pages send to sign-in; a forged, tampered or signed-out cookie is no session; headers forbid script and framing")
    func signedOut() async throws {
        try await Self.withConsole { stack, browser in
            let user = browser()
            for path in ["/console", "/console/apps/demo", "/console/verifications", "/console/apps/demo/customers/alice"] {
                let reply = try await user.get(path)
                #expect(reply.status == 303 && reply.headers["location"] == "/console/login", "\(path)")
            }
            let login = try await user.get("/console/login")
            #expect(login.status == 200 && login.text.contains("<form method=\"post\" action=\"/console/login\""))
            let policy = login.headers["content-security-policy"] ?? ""
            #expect(policy.contains("default-src 'none'") && !policy.contains("script-src") && policy.contains("frame-ancestors 'none'"))
            #expect(!login.text.contains("<script") && !login.text.contains("style="))
            #expect(login.setCookies.first?.contains("HttpOnly") == true && login.setCookies.first?.contains("SameSite=Strict") == true)

            let signedIn = try await user.signIn(account: "", password: stack.api.adminKey)
            #expect(signedIn.status == 303 && signedIn.headers["location"] == "/console")
            let cookie = try #require(signedIn.setCookies.first { $0.hasPrefix("storekeeper_console=") })
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Path=/console"))
            #expect(try await user.get("/console/apps/demo").status == 200)
            // The admin key never appears on a page.
            #expect(!(try await user.get("/console/apps/demo").text.contains(stack.api.adminKey)))

            // Tampered: a payload that claims more, with the old signature.
            let value = try #require(user.cookies["storekeeper_console"])
            let parts = value.split(separator: ".").map(String.init)
            let forged = browser()
            forged.cookies["storekeeper_console"] = parts[0] + "x." + parts[1]
            #expect(try await forged.get("/console/apps/demo").status == 303)
            forged.cookies["storekeeper_console"] = "e30." + parts[1]
            #expect(try await forged.get("/console/apps/demo").status == 303)

            // Signed out: the same cookie, replayed, is refused.
            let page = try await user.get("/console/apps/demo")
            let out = try await user.post("/console/logout", ["csrf": Browser.csrf(page) ?? ""])
            #expect(out.status == 303 && out.headers["location"] == "/console/login")
            let replay = browser()
            replay.cookies["storekeeper_console"] = value
            #expect(try await replay.get("/console/apps/demo").status == 303)
        }
    }

    @Test("a customer's page says whether each entitlement renews: turned off by the subscriber, or a billing issue with its grace period's end")
    func renewalShown() async throws {
        try await Self.withConsole { stack, browser in
            let sim = stack.simulator
            func subscribe(_ user: String) async throws -> SimulatorClient.Purchase {
                let device = try await sim.createDevice(bundleId: demoBundle)
                let bought = try await sim.purchase(device: device, productId: "com.example.pro.monthly")
                #expect(
                    try await stack.api.postReceipt(appUserId: user, receipt: bought.receipt, wait: TestWait.seconds).json["state"] as? String
                        == "verified")
                return bought
            }
            func renewal(_ page: HTTPJSONClient.Reply) -> String {
                let row = page.text.components(separatedBy: "<tr id=\"entitlement-pro\">").dropFirst().first ?? ""
                let cell = row.components(separatedBy: "<td class=\"renewal\">").dropFirst().first ?? ""
                return cell.components(separatedBy: "</td>").first ?? ""
            }
            let quits = try await subscribe("quits")
            let unpaid = try await subscribe("unpaid")
            let admin = browser()
            #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)

            try await sim.cancelAutoRenew(originalTransactionId: quits.originalTransactionId)
            _ = try await stack.api.postReceipt(appUserId: "quits", receipt: quits.receipt, refresh: true, wait: TestWait.seconds)
            #expect(renewal(try await admin.get("/console/apps/demo/customers/quits")) == "turned off")
            #expect(renewal(try await admin.get("/console/apps/demo/customers/unpaid")) == "renews")

            // Apple could not charge at the period's end: access kept for the grace period.
            try await sim.failBilling(originalTransactionId: unpaid.originalTransactionId, gracePeriod: true)
            let periodEnd = try #require(try await stack.api.subscriber("unpaid").subscriptions.first?.expiresDate)
            try await sim.advanceClock(seconds: periodEnd.timeIntervalSince(stack.clock.now()) + 5)
            _ = try await stack.api.postReceipt(appUserId: "unpaid", receipt: unpaid.receipt, refresh: true, wait: TestWait.seconds)
            let graceEnd = try #require(try await stack.api.subscriber("unpaid").entitlements["pro"]?.gracePeriodExpiresAt)
            #expect(
                renewal(try await admin.get("/console/apps/demo/customers/unpaid")) == "billing issue, grace until \(graceEnd.formatted(.iso8601))")
        }
    }

    @Test("a session signed out in one process is refused by another process of the same deployment")
    func signOutAcrossProcesses() async throws {
        try await Self.withConsole { stack, browser in
            let other = try await stack.startAnotherServer(configuration: stack.configuration)
            let elsewhere = ConsoleBrowser(baseURL: other.url)
            do {
                let user = browser()
                #expect(try await user.signIn(account: "", password: stack.api.adminKey).status == 303)
                let value = try #require(user.cookies["storekeeper_console"])
                // The cookie is the session: the other process shows pages to it, and keeps it
                // while the first process shows pages to other sessions.
                elsewhere.cookies["storekeeper_console"] = value
                #expect(try await elsewhere.get("/console/apps/demo").status == 200)
                let page = try await user.get("/console/apps/demo")
                #expect(try await user.post("/console/logout", ["csrf": Browser.csrf(page) ?? ""]).status == 303)
                #expect(try await elsewhere.get("/console/apps/demo").status == 303)
                #expect(try await elsewhere.get("/console/verifications").status == 303)
                // A new session is not caught by the old one's sign-out.
                let again = browser()
                #expect(try await again.signIn(account: "", password: stack.api.adminKey).status == 303)
                let fresh: String = try #require(again.cookies["storekeeper_console"])
                elsewhere.cookies["storekeeper_console"] = fresh
                #expect(try await elsewhere.get("/console/apps/demo").status == 200)
            } catch {
                try await elsewhere.shutdown()
                try await other.stop()
                throw error
            }
            try await elsewhere.shutdown()
            try await other.stop()
        }
    }

    @Test("sign-in: a form without the CSRF cookie's token is refused; five wrong passwords lock the account, not the others")
    func signInAttacks() async throws {
        try await Self.withConsole { stack, browser in
            let user = browser()
            _ = try await user.get("/console/login")
            // Posted from elsewhere: the token is missing or is not this browser's.
            #expect(try await user.post("/console/login", ["account": "", "password": stack.api.adminKey]).status == 403)
            #expect(try await user.post("/console/login", ["csrf": "guess", "account": "", "password": stack.api.adminKey]).status == 403)
            let stranger = browser()
            let theirs = try await stranger.get("/console/login")
            #expect(
                try await user.post("/console/login", ["csrf": Browser.csrf(theirs) ?? "", "account": "", "password": stack.api.adminKey]).status
                    == 403)

            for _ in 0..<5 {
                #expect(try await user.signIn(account: "reader", password: "wrong").status == 401)
            }
            // Locked now, even with the right password; the admin key is another account.
            let locked = try await user.signIn(account: "reader", password: Self.readerPassword)
            #expect(locked.status == 429 && locked.text.contains("Too many failed sign-ins"))
            #expect(try await user.signIn(account: "", password: stack.api.adminKey).status == 303)
            // An unknown operator is told exactly what a wrong password is told.
            let unknown = try await browser().signIn(account: "mallory", password: "x")
            #expect(unknown.status == 401 && unknown.text.contains("Unknown operator or wrong password."))

            // Over HTTPS the form's cookie is a `__Host-` cookie (Secure, path /), which a sibling
            // subdomain cannot set: a token planted under the plain name no longer counts.
            let https = ["X-Forwarded-Proto": "https"]
            // A client that does not follow redirects and keeps no cookies: each cookie sent by hand.
            let raw = browser().http
            let page = try await raw.send(.GET, "/console/login", headers: https)
            let cookie = try #require(page.setCookies.first { $0.hasPrefix("__Host-storekeeper_console_login=") })
            let attributes = Set(cookie.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() })
            #expect(attributes.contains("secure") && attributes.contains("path=/") && !attributes.contains { $0.hasPrefix("domain") }, "\(cookie)")
            let token = try #require(Browser.csrf(page))
            func signIn(cookie name: String) async throws -> Int {
                let form = "csrf=\(token)&account=&password=\(stack.api.adminKey)"
                let headers = https.merging(["Cookie": "\(name)=\(token)", "Content-Type": "application/x-www-form-urlencoded"]) { $1 }
                return try await raw.send(.POST, "/console/login", headers: headers, body: Data(form.utf8)).status
            }
            #expect(try await signIn(cookie: "storekeeper_console_login") == 403, "the plain name, as a sibling could plant it")
            #expect(try await signIn(cookie: "__Host-storekeeper_console_login") == 303)
        }
    }

    @Test("a stuck verification: the admin's retry without a token is refused, a read-only operator's is refused, the admin's requeues it")
    func retryAndRoles() async throws {
        try await Self.withConsole { stack, browser in
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
            #expect(try await stack.whenSettled { try await stack.api.verification(id).json["state"] as? String == "retry_scheduled" })
            try await stack.simulator.setFaults(FaultConfiguration.none)

            let reader = browser()
            #expect(try await reader.signIn(account: "reader", password: Self.readerPassword).status == 303)
            let readerPage = try await reader.get("/console/verifications?state=retry_scheduled")
            #expect(readerPage.text.contains(id) && !readerPage.text.contains("class=\"retry\""), "a read-only operator sees no action")
            let readerRetry = try await reader.post("/console/verifications/\(id)/retry", ["csrf": Browser.csrf(readerPage) ?? ""])
            #expect(readerRetry.status == 403 && readerRetry.text.contains("may look but not act"))

            let admin = browser()
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
            // In the audit log, in the operator's name; the refused attempts are not.
            let audit = try await stack.api.http.send(
                .GET, "/v1/admin/apps/demo/audit", headers: ["Authorization": "Bearer \(stack.api.adminKey)"])
            let requeues = (audit.json["entries"] as? [[String: Any]] ?? []).compactMap { $0["entry"] as? [String: Any] }
                .filter { $0["action"] as? String == "verification_requeued" }
            #expect(requeues.count == 1, "\(audit.text)")
            #expect(requeues.first?["actor"] as? String == "console:admin key" && requeues.first?["subject"] as? String == id)
            #expect(requeues.first?["appUserId"] as? String == "stuck")
        }
    }

    @Test("an HTML-injection user id renders as text everywhere; the overview shows the API's figures; search finds by id and app transaction id")
    func escapingAndFigures() async throws {
        try await Self.withConsole { stack, browser in
            let hostile = "<script>alert(1)</script>\"'&"
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: hostile, signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let admin = browser()
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

    @Test(
        "search finds a customer by transaction id, appAccountToken and e-mail, and no one by a prefix; the customer's page lists their verifications, events and Apple's notifications"
    )
    func searchAndHistory() async throws {
        try await Self.withConsole { stack, browser in
            try await stack.sendNotifications()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let token = AppAccountToken.derive(appUserId: "erin")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly", appAccountToken: token)
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "erin", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let attributes = try await stack.api.http.send(
                .PATCH, "/v1/subscribers/erin/attributes", headers: ["Authorization": "Bearer \(stack.api.apiKey)"],
                body: Data(#"{"email":"Erin.Example@Example.com"}"#.utf8))
            #expect(attributes.status == 200, "\(attributes.text)")
            let admin = browser()
            #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)
            for (query, how) in [
                // A first purchase: its transaction id is its original transaction id, the first named.
                (bought.transactionId, "holds that transaction"),
                (token.uppercased(), "bought with that appAccountToken"), ("erin.example@example.com", "by e-mail"), ("erin", "by app user id"),
            ] {
                let encoded = try #require(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                let page = try await admin.get("/console/apps/demo/customers?q=\(encoded)")
                #expect(page.text.contains("href=\"/console/apps/demo/customers/erin\">erin</a> \(how)"), "\(query): \(page.text)")
            }
            for query in [String(bought.transactionId.dropLast()), "erin.example", "%", String(repeating: "x", count: 600)] {
                let encoded = try #require(query.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
                #expect(try await admin.get("/console/apps/demo/customers?q=\(encoded)").text.contains("id=\"no-results\""), "\(query)")
            }
            let page = try await admin.get("/console/apps/demo/customers/erin")
            #expect(page.text.contains("<table id=\"customer-verifications\">"))
            #expect(page.text.contains(#"<td class="state" data-state="verified">verified</td>"#))
            #expect(page.text.contains("<table id=\"customer-events\">") && page.text.contains("<td>initial_purchase</td>"))
            // The re-verify button posts to the verifications' retry, which needs the session's token.
            #expect(page.text.contains("class=\"retry\">Retry</button>"))
            // Apple's notification of the purchase, with the original transaction it spoke of.
            #expect(
                try await stack.whenSettled {
                    let notifications =
                        try await admin.get("/console/apps/demo/customers/erin").text
                        .split(separator: "<table id=\"customer-notifications\">").last?.split(separator: "</table>").first ?? ""
                    return notifications.contains("<td>SUBSCRIBED / INITIAL_BUY</td>")
                        && notifications.contains("<td>\(bought.originalTransactionId)</td>")
                })
        }
    }

    @Test("a customer's page shows the provisional access granted while Apple could not be asked, and another customer's does not")
    func provisionalAccess() async throws {
        let entry = "reader:read_only:" + (try ConsoleSettings.hashPassword(Self.readerPassword))
        try await withStack(configure: {
            $0.notificationGapFill.enabled = false
            $0.console.operators = [entry]
            // No worker: the test plays the one that found Apple down.
            $0.runWorkers = false
        }) { stack in
            let browsers = Browsers(baseURL: stack.api.http.baseURL)
            do {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                let submitted = try await stack.api.postReceipt(appUserId: "pia", receipt: bought.receipt)
                let verificationId = try #require(submitted.json["id"] as? String, "\(submitted.text)")
                let now = stack.clock.now()
                let lease = try #require(
                    try await stack.store.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "test", now: now, leaseDuration: 60).first)
                let grant = ProvisionalGrant(
                    appId: "demo", appUserId: "pia", verificationId: verificationId, transactionId: "provisional-1",
                    originalTransactionId: "provisional-1", productId: "com.example.pro.monthly", expiresAt: now.addingTimeInterval(3_600))
                #expect(
                    try await VerificationOutcomes(store: stack.store).scheduleRetry(
                        lease, verificationId: verificationId, report: AttemptReport(statuses: [], environment: nil, reason: "apple_http_503"),
                        at: now.addingTimeInterval(600), provisional: [grant], now: now))
                let reader = browsers.open()
                #expect(try await reader.signIn(account: "reader", password: Self.readerPassword).status == 303)
                let page = try await reader.get("/console/apps/demo/customers/pia")
                let table =
                    String(page.text.split(separator: "<table id=\"customer-provisional\">").last ?? "").split(separator: "</table>").first ?? ""
                #expect(table.contains("<td>com.example.pro.monthly</td>") && table.contains("<td>provisional-1</td>"), "\(page.text)")
                #expect(table.contains("<td>\(verificationId)</td>"))
                let other = try await reader.get("/console/apps/demo/customers/alice")
                #expect(!other.text.contains("provisional-1"))
            } catch {
                try await browsers.close()
                throw error
            }
            try await browsers.close()
        }
    }

    @Test(
        "webhooks: a dead letter listed with its last answer; replay and skip refused without the token and to a read-only operator, done by an admin and audited"
    )
    func deadLettersAndReplay() async throws {
        let receiver = try await WebhookReceiver.start()
        receiver.behave(.gone)
        do {
            try await Self.withConsole { stack, browser in
                let adminHeaders = ["Authorization": "Bearer \(stack.api.adminKey)"]
                let created = try await stack.api.http.send(
                    .POST, "/v1/admin/apps/demo/webhooks", headers: adminHeaders, body: Data(#"{"url":"\#(receiver.url)"}"#.utf8))
                let endpointId = try #require((created.json["endpoint"] as? [String: Any])?["id"] as? String, "\(created.text)")
                // A second endpoint whose dead letter is skipped instead.
                let second = try await stack.api.http.send(
                    .POST, "/v1/admin/apps/demo/webhooks", headers: adminHeaders, body: Data(#"{"url":"\#(receiver.url)"}"#.utf8))
                let skippedEndpoint = try #require((second.json["endpoint"] as? [String: Any])?["id"] as? String, "\(second.text)")
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                #expect(try await stack.api.postReceipt(appUserId: "dana", receipt: bought.receipt, wait: TestWait.seconds).status == 200)
                let deadPath = "/v1/admin/apps/demo/webhooks/\(endpointId)/deliveries?state=dead"
                #expect(
                    try await stack.whenSettled {
                        (try await stack.api.http.send(.GET, deadPath, headers: adminHeaders).json["deliveries"] as? [Any])?.count == 1
                    })

                let reader = browser()
                #expect(try await reader.signIn(account: "reader", password: Self.readerPassword).status == 303)
                let readerPage = try await reader.get("/console/apps/demo/webhooks")
                #expect(readerPage.text.contains("id=\"dead-\(endpointId)\"") && readerPage.text.contains("HTTP 410"))
                #expect(!readerPage.text.contains("class=\"replay\""), "a read-only operator sees no action")
                // Dana's page shows the delivery that died.
                let dana = try await reader.get("/console/apps/demo/customers/dana")
                let deliveries = String(dana.text.split(separator: "<table id=\"customer-deliveries\">").last ?? "")
                #expect(deliveries.contains("<td>\(endpointId)</td>") && deliveries.contains("<td>dead</td>"), "\(dana.text)")
                let replayPath = "/console/apps/demo/webhooks/\(endpointId)/replay"
                #expect(try await reader.post(replayPath, ["csrf": Browser.csrf(readerPage) ?? ""]).status == 403)

                let admin = browser()
                #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)
                let page = try await admin.get("/console/apps/demo/webhooks")
                #expect(page.text.contains("class=\"replay\"") && page.text.contains("<td class=\"success-rate\">0% of 1</td>"))
                #expect(try await admin.post(replayPath, [:]).status == 403)
                #expect((try await stack.api.http.send(.GET, deadPath, headers: adminHeaders).json["deliveries"] as? [Any])?.count == 1)
                // Another app's path names no endpoint of this app: nothing replayed.
                let foreign = try await admin.post("/console/apps/other/webhooks/\(endpointId)/replay", ["csrf": Browser.csrf(page) ?? ""])
                #expect(foreign.status == 404 || foreign.headers["location"]?.contains("Replayed%200") == true)
                let replayed = try await admin.post(replayPath, ["csrf": Browser.csrf(page) ?? ""])
                #expect(replayed.status == 303)
                let after = try await admin.get(try #require(replayed.headers["location"]))
                #expect(after.text.contains("Replayed 1 dead delivery"), "\(after.text)")
                #expect((try await stack.api.http.send(.GET, deadPath, headers: adminHeaders).json["deliveries"] as? [Any])?.isEmpty == true)
                // Audited once, in the operator's name: the refused and foreign attempts wrote nothing.
                let audit = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/audit", headers: adminHeaders)
                let replays = (audit.json["entries"] as? [[String: Any]] ?? []).compactMap { $0["entry"] as? [String: Any] }
                    .filter { $0["action"] as? String == "webhook_replayed" }
                #expect(replays.count == 1 && replays.first?["actor"] as? String == "console:admin key", "\(audit.text)")

                // The second endpoint's dead letter, skipped for good from the console.
                let secondDead = "/v1/admin/apps/demo/webhooks/\(skippedEndpoint)/deliveries?state=dead"
                #expect(
                    try await stack.whenSettled {
                        (try await stack.api.http.send(.GET, secondDead, headers: adminHeaders).json["deliveries"] as? [Any])?.count == 1
                    })
                let dead = try await stack.api.http.send(.GET, secondDead, headers: adminHeaders)
                let deliveryId = try #require(
                    (((dead.json["deliveries"] as? [[String: Any]])?.first)?["delivery"] as? [String: Any])?["id"] as? String, "\(dead.text)")
                let skipPath = "/console/apps/demo/webhooks/\(skippedEndpoint)/skip"
                let again = try await admin.get("/console/apps/demo/webhooks")
                let readerAgain = try await reader.get("/console/apps/demo/webhooks")
                #expect(again.text.contains("class=\"skip-delivery\"") && !readerAgain.text.contains("class=\"skip-delivery\""))
                #expect(try await reader.post(skipPath, ["csrf": Browser.csrf(readerPage) ?? "", "deliveryId": deliveryId]).status == 403)
                #expect(try await admin.post(skipPath, ["deliveryId": deliveryId]).status == 403)
                let unknown = try await admin.post(skipPath, ["csrf": Browser.csrf(again) ?? "", "deliveryId": "dlv_nobody"])
                #expect(unknown.headers["location"]?.contains("No%20such%20dead%20delivery") == true)
                let skipped = try await admin.post(skipPath, ["csrf": Browser.csrf(again) ?? "", "deliveryId": deliveryId])
                #expect((try await admin.get(try #require(skipped.headers["location"]))).text.contains("Skipped dead delivery \(deliveryId)"))
                // Still dead, marked skipped: the subscriber's later events go on without it.
                let marked = try await stack.api.http.send(.GET, secondDead, headers: adminHeaders)
                #expect(
                    (((marked.json["deliveries"] as? [[String: Any]])?.first)?["delivery"] as? [String: Any])?["lastError"] as? String
                        == "skipped_by_operator", "\(marked.text)")
                let audited = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/audit", headers: adminHeaders)
                let skips = (audited.json["entries"] as? [[String: Any]] ?? []).compactMap { $0["entry"] as? [String: Any] }
                    .filter { $0["action"] as? String == "webhook_skipped" }
                #expect(
                    skips.count == 1 && skips.first?["actor"] as? String == "console:admin key" && skips.first?["subject"] as? String == deliveryId)
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    @Test("catalog and ledger: rows shown, both downloads equal to the API's; Apple health and the queue; webhooks without their secrets")
    func operationsPages() async throws {
        try await Self.withConsole { stack, browser in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            for product in ["com.example.removeads", "com.example.coins100"] {
                let bought = try await stack.simulator.purchase(device: device, productId: product)
                #expect(
                    try await stack.api.postSignedTransaction(appUserId: "payer", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                        .status == 200
                )
            }
            let adminHeaders = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let created = try await stack.api.http.send(
                .POST, "/v1/admin/apps/demo/webhooks", headers: adminHeaders, body: Data(#"{"url":"https://hooks.example.com/storekeeper"}"#.utf8))
            let secret = try #require(created.json["secret"] as? String, "\(created.text)")

            let admin = browser()
            #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)
            let ledger = try await admin.get("/console/apps/demo/ledger")
            #expect(ledger.status == 200 && ledger.text.contains("<span id=\"ledger-count\">2</span>"), "\(ledger.text)")
            #expect(ledger.text.contains("com.example.season.pass") && ledger.text.contains("2.99 USD"))
            for format in ["csv", "json"] {
                let download = try await admin.get("/console/apps/demo/ledger.\(format)?environment=production")
                let api = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/ledger?format=\(format)", headers: adminHeaders)
                #expect(
                    download.status == 200 && download.body == api.body && download.headers["content-disposition"]?.hasPrefix("attachment") == true)
            }
            #expect(try await admin.get("/console/apps/demo/ledger?from=2026-02-01&to=2026-01-01").status == 400)

            // A page at a time: each page's cursor leads to the next, the last has none.
            let whole = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/ledger", headers: adminHeaders)
            let all = try #require(whole.json["entries"] as? [[String: Any]]).compactMap { $0["transactionId"] as? String }
            #expect(all.count == 2 && whole.json["nextCursor"] == nil)
            var paged: [String] = []
            var after = ""
            for _ in 0..<3 {
                let page = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/ledger?limit=1\(after)", headers: adminHeaders)
                #expect(page.status == 200, "\(page.text)")
                paged += (page.json["entries"] as? [[String: Any]] ?? []).compactMap { $0["transactionId"] as? String }
                guard let cursor = page.json["nextCursor"] as? String else { break }
                after = "&after=\(cursor)"
            }
            #expect(paged == all, "pages in order, each entry once")
            for bad in ["after=not-a-cursor", "after=", "limit=0", "limit=1001"] {
                let refused = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/ledger?\(bad)", headers: adminHeaders)
                #expect(refused.status == 400 && (refused.json["error"] as? [String: Any])?["code"] as? String == "invalid_request", "\(bad)")
            }

            var health = try await admin.get("/console/health")
            #expect(health.status == 200 && health.text.contains("data-state=\"verified\">2</dd>"), "\(health.text)")
            #expect(health.text.contains("<p>No outage.</p>"))
            #expect(health.text.contains("<table id=\"notifications-received\">") && health.text.contains("<p>None.</p>"))
            // Two of Apple's test notifications received: counted by app, type and outcome.
            for uuid in ["n1", "n2"] {
                let record = NotificationRecord(
                    appId: "demo", notificationUUID: uuid, notificationType: "TEST", subtype: nil, signedDate: stack.clock.now(),
                    originalTransactionId: nil, environment: "Sandbox", payload: "{}", outcome: .test)
                _ = try await stack.store.recordNotification(
                    NotificationWrite(record: record, submission: nil, events: nil, forwards: { _ in [] }), now: stack.clock.now())
            }
            // Outages as the processes shared them: one over (90 s), one under way.
            let now = stack.clock.now()
            for (endpoint, state, ago) in [
                ("verify_receipt_production", AppleHealth.State.down, 3_600.0), ("verify_receipt_production", .healthy, 3_510),
                ("server_api_production", .down, 60),
            ] {
                _ = try await stack.store.moveSharedAppleHealth(endpoint: endpoint, to: state, at: now.addingTimeInterval(-ago)) { _ in nil }
            }
            health = try await admin.get("/console/health")
            #expect(health.text.contains("<tr><td>demo</td><td>TEST</td><td>test</td><td class=\"count\">2</td></tr>"), "\(health.text)")
            // The gap-fill's pulls (this stack's is off: one kept as another process would keep it).
            #expect(health.text.contains("<p>No pull yet"))
            try await stack.store.recordGapFillRun(
                GapFillRun(cause: "scheduled", appId: "demo", startedAt: now, from: now - 3_600, to: now, examined: 4, recovered: 3, error: "x<b>"))
            health = try await admin.get("/console/health")
            #expect(health.text.contains("<td class=\"recovered\">3</td>") && health.text.contains("<td class=\"error\">x&lt;b&gt;</td>"))
            let outages = health.text.components(separatedBy: "<table id=\"outages\">").last ?? ""
            #expect(
                outages.contains("<td>server_api_production</td>") && outages.contains("<td class=\"ended\">not yet</td>"), "\(outages.prefix(1500))")
            #expect(outages.contains("<td>verify_receipt_production</td>") && outages.contains("<td>1 min 30 s</td>"), "\(outages.prefix(1500))")
            #expect(
                (outages.range(of: "server_api_production")?.lowerBound ?? outages.endIndex)
                    < (outages.range(of: "verify_receipt_production")?.lowerBound ?? outages.startIndex), "newest first")
            // Calls to Apple by hour: this process's receipt verification (tallied in memory, or
            // flushed: the page reads both), with two slow 503s another process kept.
            stack.clock.freeze()
            let receipt = try await stack.simulator.purchase(device: device, productId: "com.example.coins100").receipt
            #expect(
                try await stack.api.postReceipt(appUserId: "payer", receipt: receipt, wait: TestWait.seconds).json["state"] as? String == "verified")
            var slow = AppleCallTally(
                endpoint: "verify_receipt_production", outcome: "http_503", period: AppleCallTally.minute(of: stack.clock.now()))
            slow.add(milliseconds: 40_000)
            slow.add(milliseconds: 40_000)
            try await AppleCallHistory(store: stack.store).add([slow], now: stack.clock.now())
            health = try await admin.get("/console/health")
            let calls = health.text.components(separatedBy: "<table id=\"apple-calls\">").last ?? ""
            let row = calls.components(separatedBy: "<tr data-endpoint=\"verify_receipt_production\">").dropFirst().first ?? ""
            #expect(
                row.hasPrefix("<td>\(AppleCallTally.hour(of: stack.clock.now()).formatted(.iso8601))</td>")
                    && row.contains("<td class=\"count\">3</td><td class=\"outcomes\">http_503 × 2, 0 × 1</td><td class=\"p50\">&gt; 30000 ms</td>"),
                "\(calls.prefix(1500))")
            let webhooks = try await admin.get("/console/apps/demo/webhooks")
            #expect(webhooks.text.contains("https://hooks.example.com/storekeeper") && !webhooks.text.contains(secret))
            #expect(!webhooks.text.contains(String(secret.dropFirst("whsec_".count).prefix(12))))
            // Signed out, a download is no download.
            let stranger = browser()
            #expect(try await stranger.get("/console/apps/demo/ledger.csv").status == 303)
        }
    }

    @Test("a customer's promotional access granted and revoked in the operator's name, audited; a read-only operator's grant is refused")
    func promotionalAccess() async throws {
        try await Self.withConsole { stack, browser in
            let adminHeaders = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let reader = browser()
            #expect(try await reader.signIn(account: "reader", password: Self.readerPassword).status == 303)
            let readerPage = try await reader.get("/console/apps/demo/customers/alice")
            #expect(readerPage.status == 200 && !readerPage.text.contains("id=\"grant-form\""))
            let refused = try await reader.post(
                "/console/apps/demo/customers/alice/promotional-grants",
                ["csrf": Browser.csrf(readerPage) ?? "", "entitlementId": "pro", "reason": "support"])
            #expect(refused.status == 403)

            let admin = browser()
            #expect(try await admin.signIn(account: "", password: stack.api.adminKey).status == 303)
            let page = try await admin.get("/console/apps/demo/customers/alice")
            #expect(page.text.contains("id=\"grant-form\"") && page.text.contains("<option value=\"pro\">"))
            let granted = try await admin.post(
                "/console/apps/demo/customers/alice/promotional-grants",
                ["csrf": Browser.csrf(page) ?? "", "entitlementId": "pro", "duration": "P1M", "reason": "a support case"])
            #expect(granted.status == 303)
            let location = try #require(granted.headers["location"])
            let after = try await admin.get(location)
            #expect(after.text.contains("Granted pro") && after.text.contains("console:admin key"), "\(after.text)")
            // A notice is shown only as this console sealed it for this session: a crafted link
            // (no seal, another text under the seal, the seal shown to another operator) shows none.
            let crafted = "Your session expired: call +1 555 0100 to sign in again"
            let craftedQuery = "notice=\(crafted.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")"
            let seal = try #require(location.split(separator: "&ns=").last.map(String.init))
            let reader2 = browser()
            #expect(try await reader2.signIn(account: "reader", password: Self.readerPassword).status == 303)
            for (who, path) in [
                (admin, "/console/apps/demo/customers/alice?\(craftedQuery)"),
                (admin, "/console/apps/demo/customers/alice?\(craftedQuery)&ns=\(seal)"),
                (admin, "/console/apps/demo/webhooks?\(craftedQuery)&ns=\(seal)"),
                (reader2, location),
            ] {
                let shown = try await who.get(path)
                #expect(shown.status == 200 && !shown.text.contains("call +1 555") && !shown.text.contains("Granted pro"), "\(path)")
            }
            let subscriber = try await stack.api.http.send(.GET, "/v1/subscribers/alice", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            let pro = (subscriber.json["entitlements"] as? [String: Any])?["pro"] as? [String: Any]
            #expect(pro?["isActive"] as? Bool == true && pro?["source"] as? String == "promotional", "\(subscriber.text)")
            let audit = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/audit", headers: adminHeaders)
            #expect(audit.text.contains("console:admin key") && audit.text.contains("a support case"))

            // Without a reason nothing is revoked; with one, it is.
            let grants = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/subscribers/alice/promotional-grants", headers: adminHeaders)
            let grantId = try #require((grants.json["grants"] as? [[String: Any]])?.first?["id"] as? String)
            let noReason = try await admin.post(
                "/console/apps/demo/promotional-grants/\(grantId)/revoke", ["csrf": Browser.csrf(after) ?? "", "appUserId": "alice"])
            #expect(try await admin.get(try #require(noReason.headers["location"])).text.contains("Not revoked"))
            let revoked = try await admin.post(
                "/console/apps/demo/promotional-grants/\(grantId)/revoke",
                ["csrf": Browser.csrf(after) ?? "", "appUserId": "alice", "reason": "granted by mistake"])
            #expect(try await admin.get(try #require(revoked.headers["location"])).text.contains("Revoked grant"))
            let gone = try await stack.api.http.send(.GET, "/v1/subscribers/alice", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect(((gone.json["entitlements"] as? [String: Any])?["pro"] as? [String: Any])?["isActive"] as? Bool != true)
            // Both on alice's page, newest first, in the operator's name; not on another customer's.
            let alicePage = try await admin.get("/console/apps/demo/customers/alice")
            let table = String(alicePage.text.split(separator: "<table id=\"customer-audit\">").last ?? "")
            let revokedAt = try #require(table.range(of: "promotional_grant_revoked"))
            let grantedAt = try #require(table.range(of: "<td>promotional_grant</td>"))
            #expect(revokedAt.lowerBound < grantedAt.lowerBound && table.contains("granted by mistake") && table.contains("console:admin key"))
            let other = try await admin.get("/console/apps/demo/customers/nobody-else")
            #expect(!(other.text.split(separator: "<table id=\"customer-audit\">").last ?? "").contains("promotional_grant"))
        }
    }
}
