import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import Logging
import NIOCore
import Persistence
import StorekeeperConsole
import StorekeeperCore
import StorekeeperDomain

/// The operators' console at `/console` (docs/CONSOLE.md): server-rendered pages over the same use
/// cases as the API, so a figure shown is the figure the API answers. Signed in with the admin key
/// or an operator account (`console.operators`), a session cookie (HttpOnly, SameSite=Strict,
/// Secure behind TLS), a CSRF token in every form, lockout after repeated failures; `read_only`
/// operators look and never act. Pages carry no script and a Content-Security-Policy forbidding any.
struct ConsoleController {
    let context: ServerContext
    let renderer: ConsoleRenderer
    let signer: ConsoleSessionSigner
    let gate: ConsoleGate
    let accounts: [String: ConsoleOperator]
    /// Checked in place of an unknown operator's password, with the parameters the real ones
    /// use: a made-up name costs the same scrypt as a real one, so the time of the answer does
    /// not tell which names exist. It matches nothing (a random hash of a random password).
    let decoy: OperatorPassword?

    static let loginCookie = "storekeeper_console_login"
    /// Password checks run at once (each scrypt is 32 MiB): more are told to retry, not queued.
    static let concurrentPasswordChecks = 2

    init(context: ServerContext) throws {
        self.context = context
        renderer = try ConsoleRenderer()
        signer = ConsoleSessionSigner(adminKey: context.configuration.adminKey)
        accounts = context.configuration.console.accounts
        gate = ConsoleGate()
        decoy = Self.decoy(for: accounts)
    }

    /// A password no one knows, with the parameters of the operators' (the first by name): the
    /// same scrypt cost as theirs.
    static func decoy(for accounts: [String: ConsoleOperator]) -> OperatorPassword? {
        accounts.values.sorted { $0.name < $1.name }.first.map { real in
            var decoy = real.password
            decoy.salt = Data((0..<decoy.salt.count).map { _ in UInt8.random(in: 0...255) })
            decoy.hash = Data((0..<decoy.hash.count).map { _ in UInt8.random(in: 0...255) })
            return decoy
        }
    }

    /// The password a sign-in as `account` is checked against: the operator's, or the decoy.
    func passwordChecked(for account: String) -> (password: OperatorPassword?, exists: Bool) {
        if let real = accounts[account] { return (real.password, true) }
        return (decoy, false)
    }

    func register(on router: RouteTable) {
        let console = router.group("console")
        console.get("static/console.css") { _, _ in
            var headers = HTTPFields()
            headers[.contentType] = "text/css; charset=utf-8"
            headers[.cacheControl] = "max-age=3600"
            headers[.xContentTypeOptions] = "nosniff"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: ConsoleTemplates.stylesheet)))
        }
        console.group().add(middleware: ConsoleAdmission(console: self, need: .optional)).get("login") { request, ctx in
            if case .console = ctx.admitted { return redirect("/console") }
            return loginPage(request, status: .ok, notice: nil)
        }
        console.post("login") { request, _ in try await signIn(request) }
        let pages = group(console, .page)
        let actions = group(console, .action(needsAdmin: true))
        group(console, .action(needsAdmin: false)).post("logout") { request, ctx in
            let session = ctx.session
            let expires = StoredTime.date(session.expires)
            gate.revoke(session.nonce, until: expires, now: context.now())
            try await context.useCases.consoleSessions.signOut(nonce: session.nonce, expires: expires, now: context.now())
            var response = redirect("/console/login")
            response.setCookie(expired(ConsoleSession.cookieName, request))
            return response
        }
        pages.get("") { _, _ in redirect("/console/apps/\(ConsoleFormat.pathSegment(context.apps[0].id))") }
        pages.get("apps/:app") { request, ctx in try await overview(request, ctx) }
        pages.get("apps/:app/customers") { request, ctx in try await customers(request, ctx) }
        pages.get("apps/:app/customers/:id") { request, ctx in try await customer(request, ctx) }
        pages.get("verifications") { request, ctx in try await verifications(request, ctx.session) }
        registerOperations(pages: pages, actions: actions)
        registerCustomerActions(on: actions)
        actions.post("verifications/:id/retry") { _, ctx in
            let id = try ctx.parameters.decoded("id")
            let outcome = try await context.useCases.requeueVerification(
                verificationId: id, actor: ctx.actor, now: context.now())
            let done: String =
                switch outcome {
                case .requeued: "requeued"
                case .busy: "busy"
                case .notFound: "not_found"
                case .refused: "refused"
                }
            context.logger.notice("console: verification retry", metadata: ["verification": "\(id)", "outcome": "\(done)"])
            return redirect("/console/verifications?done=\(done)&id=\(ConsoleFormat.pathSegment(id))")
        }
    }

    /// Console routes under `console` behind `ConsoleAdmission`: their context carries the session.
    private func group(_ console: RouterGroup<StorekeeperRequestContext>, _ need: ConsoleAdmission.Need) -> RouterGroup<ConsoleRequestContext> {
        console.group().add(middleware: ConsoleAdmission(console: self, need: need)).group(context: ConsoleRequestContext.self)
    }

    // MARK: - Sessions

    /// The session the request's cookie carries: signed, not expired, and not signed out here or
    /// (the stored sign-outs, learnt once) in another process.
    func session(_ request: Request) async throws -> ConsoleSession? {
        guard let value = request.cookies[ConsoleSession.cookieName]?.value,
            let session = signer.session(from: value, now: context.now()), !gate.isRevoked(session.nonce)
        else { return nil }
        guard try await !context.useCases.consoleSessions.isSignedOut(nonce: session.nonce) else {
            gate.revoke(session.nonce, until: StoredTime.date(session.expires), now: context.now())
            return nil
        }
        return session
    }

    private func signIn(_ request: Request) async throws -> Response {
        struct LoginForm: Decodable {
            var csrf: String?
            var account: String?
            var password: String?
        }
        guard let text = try await Self.formText(request), let form = Self.decodeForm(LoginForm.self, text),
            let expected = request.cookies[Self.loginCookieName(request)]?.value, KeyComparison.equal(form.csrf ?? "", expected)
        else {
            return loginPage(request, status: .forbidden, notice: "The form was not sent from this console, or it expired: sign in again.")
        }
        let account = (form.account ?? "").trimmingCharacters(in: .whitespaces)
        let password = form.password ?? ""
        // Counted in the database under the name typed (a made-up one too: a lockout names no
        // account), so every process locks it at once and no flood of names evicts a lock.
        let key = account.isEmpty ? "console:admin key" : "console:operator \(account)"
        let now = context.now()
        let attempts = context.useCases.attempts
        if let until = try await attempts.blockedUntil(key, limit: .consoleSignIn, now: now) {
            return loginPage(
                request, status: .tooManyRequests, notice: "Too many failed sign-ins: try again after \(ConsoleFormat.instant(until)).",
                account: account)
        }
        let signedIn: (String, ConsoleRole)?
        if account.isEmpty {
            signedIn = KeyComparison.equal(password, context.configuration.adminKey) ? ("admin key", .admin) : nil
        } else {
            guard gate.beginPasswordCheck(limit: Self.concurrentPasswordChecks) else {
                return loginPage(request, status: .serviceUnavailable, notice: "Busy checking other sign-ins: try again.", account: account)
            }
            defer { gate.endPasswordCheck() }
            // Unknown or not, one scrypt with the same parameters (`decoy`).
            let (checked, exists) = passwordChecked(for: account)
            let matches = checked?.matches(password) ?? false
            signedIn = exists && matches ? accounts[account].map { ($0.name, $0.role) } : nil
        }
        guard let (name, role) = signedIn else {
            try await attempts.record(key, limit: .consoleSignIn, now: now)
            context.logger.notice("console: sign-in refused", metadata: ["account": "\(key)"])
            return loginPage(request, status: .unauthorized, notice: "Unknown operator or wrong password.", account: account)
        }
        try await attempts.clear(key)
        let minutes = context.configuration.console.sessionMinutes
        let session = ConsoleSession(
            name: name, role: role, expires: Int64((now.timeIntervalSince1970 + minutes * 60) * 1000), nonce: ConsoleSessionSigner.randomNonce())
        context.logger.notice("console: signed in", metadata: ["account": "\(name)", "role": "\(role.rawValue)"])
        var response = redirect("/console")
        response.setCookie(
            Cookie(
                name: ConsoleSession.cookieName, value: try signer.cookieValue(session), maxAge: Int(minutes * 60), path: "/console",
                secure: Self.isSecure(request), httpOnly: true, sameSite: .strict))
        response.setCookie(
            Cookie(
                name: Self.loginCookieName(request), value: "", maxAge: 0, path: Self.loginCookiePath(request), secure: Self.isSecure(request),
                httpOnly: true, sameSite: .strict))
        return response
    }

    private func loginPage(_ request: Request, status: HTTPResponse.Status, notice: String?, account: String = "") -> Response {
        // Double-submit: the form's token must equal this cookie, which only this origin can read.
        let token = request.cookies[Self.loginCookieName(request)]?.value ?? ConsoleSessionSigner.randomNonce()
        var response = render("Sign in", SignInPage(csrf: token, account: account), session: nil, status: status, notice: notice)
        response.setCookie(
            Cookie(
                name: Self.loginCookieName(request), value: token, maxAge: 3_600, path: Self.loginCookiePath(request),
                secure: Self.isSecure(request), httpOnly: true, sameSite: .strict))
        return response
    }

    /// Over HTTPS the sign-in form's double-submit cookie is a `__Host-` cookie (Secure, path /,
    /// no domain): a browser keeps a sibling subdomain from setting or overwriting it, so another
    /// site under the same parent domain cannot plant a token of its own and sign the operator in
    /// as someone else. Plain HTTP (loopback, development) cannot carry the prefix.
    static func loginCookieName(_ request: Request) -> String { isSecure(request) ? "__Host-" + loginCookie : loginCookie }

    static func loginCookiePath(_ request: Request) -> String { isSecure(request) ? "/" : "/console" }

    private func expired(_ name: String, _ request: Request) -> Cookie {
        Cookie(name: name, value: "", maxAge: 0, path: "/console", secure: Self.isSecure(request), httpOnly: true, sameSite: .strict)
    }

    // MARK: - Pages

    private func overview(_ request: Request, _ ctx: ConsoleRequestContext) async throws -> Response {
        let session = ctx.session
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let query = QueryInput(request)
        let environment = try query.oneOf("environment", ["production", "sandbox"]) ?? "production"
        let interval = try query.oneOf("interval", ReportInterval.allCases.map(\.rawValue)).flatMap(ReportInterval.init) ?? .month
        let now = context.now()
        let (from, to, _) = try AnalyticsController.range(query, interval: interval, now: now)
        let metrics = try await context.useCases.subscriptionMetrics(
            appId: app.id, environment: environment, from: from, to: to, interval: interval, now: now, reporting: app.reporting)
        let revenue = try await context.useCases.revenue(
            appId: app.id, environment: environment, from: interval.start(of: from), to: to, interval: interval, reporting: app.reporting)
        let page = OverviewPage(metrics: metrics, revenue: revenue, environment: environment, interval: interval, from: from, to: min(to, now))
        return render("\(app.id): overview (\(environment))", page, session: session)
    }

    private func customers(_ request: Request, _ ctx: ConsoleRequestContext) async throws -> Response {
        let session = ctx.session
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let text = (Self.formField("q", in: request) ?? "").trimmingCharacters(in: .whitespaces)
        let page = CustomersPage(appId: app.id, query: text, found: try await context.useCases.findCustomers.search(appId: app.id, text: text))
        return render("\(app.id): customers", page, session: session)
    }

    private func customer(_ request: Request, _ ctx: ConsoleRequestContext) async throws -> Response {
        let session = ctx.session
        let app = try context.app(id: try ctx.parameters.decoded("app"))
        let requested = try ctx.parameters.decoded("id")
        let id = try await context.useCases.identity.resolve(appId: app.id, appUserId: requested)
        let view = try await context.useCases.readSubscriber(appId: app.id, appUserId: id, now: context.now())
        let page = CustomerPage(
            try await customerFacts(appId: app.id, appUserId: id, view: view), mayAct: session.role == .admin,
            csrf: signer.csrfToken(for: session.nonce), now: context.now())
        return render("\(app.id): customer", page, session: session, notice: sealedNotice(request, session))
    }

    private func verifications(_ request: Request, _ session: ConsoleSession) async throws -> Response {
        let query = QueryInput(request)
        let state = try query.oneOf("state", VerificationState.allCases.map(\.rawValue)).flatMap(VerificationState.init)
        let records = try await context.useCases.verifications.list(
            appId: nil, states: state.map { [$0] } ?? [], createdBefore: nil, limit: 200)
        let csrf = signer.csrfToken(for: session.nonce)
        let notice: String? =
            switch query.string("done") {
            case "requeued": "Verification \(query.string("id") ?? "") was requeued."
            case "busy": "Verification \(query.string("id") ?? "") is being verified right now."
            case "not_found": "No verification \(query.string("id") ?? "")."
            case "refused": "Verification \(query.string("id") ?? "") cannot be requeued from its state."
            default: nil
            }
        let page = VerificationsPage(records, state: state, mayAct: session.role == .admin, csrf: csrf)
        return render("Verifications", page, session: session, notice: notice)
    }

    // MARK: - Rendering

    func render(
        _ title: String, _ page: some ConsolePage, session: ConsoleSession?, status: HTTPResponse.Status = .ok, notice: String? = nil
    ) -> Response {
        let layout =
            session.map {
                ConsoleRenderer.Layout(
                    title: title, notice: notice, operator: $0.name, role: $0.role.rawValue, csrf: signer.csrfToken(for: $0.nonce),
                    appIds: context.apps.map(\.id))
            } ?? ConsoleRenderer.Layout(title: title, notice: notice)
        let html = renderer.render(page, layout: layout)
        var headers = HTTPFields()
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.cacheControl] = "no-store"
        headers[.xContentTypeOptions] = "nosniff"
        headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: html)))
    }

    /// The query that carries an action's notice to the page it redirects to, sealed for this
    /// session (`ConsoleSessionSigner.noticeSeal`).
    func noticeQuery(_ notice: String, _ session: ConsoleSession) -> String {
        let notice = String(notice.prefix(300))
        return "notice=\(ConsoleFormat.pathSegment(notice))&ns=\(signer.noticeSeal(notice, nonce: session.nonce))"
    }

    /// The notice of the action that sent the operator here, shown as text, if this console
    /// sealed it for this session; none otherwise (a link made elsewhere shows no text).
    func sealedNotice(_ request: Request, _ session: ConsoleSession) -> String? {
        guard let notice = Self.formField("notice", in: request), notice.count <= 300, let seal = Self.formField("ns", in: request),
            KeyComparison.equal(seal, signer.noticeSeal(notice, nonce: session.nonce))
        else { return nil }
        return notice
    }

    func redirect(_ location: String) -> Response {
        var headers = HTTPFields()
        headers[.location] = location
        headers[.cacheControl] = "no-store"
        return Response(status: .seeOther, headers: headers)
    }

    /// No script at all, no inline style, nothing from elsewhere, never framed.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    // MARK: - Input and formatting

    /// A form body's text (`application/x-www-form-urlencoded`, at most 16 KiB); nil when it is
    /// not one. A request's body can be read once: read it here, decode it with `decodeForm`.
    static func formText(_ request: Request) async throws -> String? {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true else { return nil }
        return String(buffer: try await request.body.collect(upTo: 16 * 1024))
    }

    static func decodeForm<Form: Decodable>(_ type: Form.Type, _ text: String) -> Form? {
        try? URLEncodedFormDecoder().decode(Form.self, from: text)
    }

    /// A field of a form sent with GET: `+` is a space there (a `+` typed is sent as `%2B`),
    /// which the API's query parsing, for URLs built by programs, does not do.
    static func formField(_ name: String, in request: Request) -> String? {
        for pair in (request.uri.query ?? "").split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    static func isSecure(_ request: Request) -> Bool {
        request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
    }

}
