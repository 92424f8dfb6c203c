import Hummingbird
import StorekeeperConsole
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Admits a request to a group of console routes before any of them runs, so no page or action
/// can forget the session, the CSRF token or the role. A page answers a missing session with the
/// sign-in page and shows a refusal (an unknown app, a malformed range) as a page with the same
/// status; an action also needs the form's CSRF token and, where the group says so, the admin
/// role. The form's text is read once, here, and carried in the context.
struct ConsoleAdmission: RouterMiddleware {
    typealias Context = StorekeeperRequestContext

    enum Need: Sendable {
        /// The session if there is one (the sign-in page, which sends a signed-in operator on).
        case optional
        /// Anyone signed in, to look.
        case page
        /// Anyone signed in, with the form's CSRF token; the admin role where `needsAdmin`.
        case action(needsAdmin: Bool)
    }

    let console: ConsoleController
    let need: Need

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var admitted = context
        let session = try await console.session(request)
        guard let session else {
            if case .optional = need { return try await next(request, context) }
            return console.redirect("/console/login")
        }
        switch need {
        case .optional:
            admitted.admitted = .console(session, form: "")
            return try await next(request, admitted)
        case .page:
            admitted.admitted = .console(session, form: "")
            do {
                return try await next(request, admitted)
            } catch let error as StorekeeperError {
                return console.render("Not shown", MessagePage(error.message), session: session, status: error.status)
            }
        case .action(let needsAdmin):
            struct ActionForm: Decodable { var csrf: String? }
            let text = try await ConsoleController.formText(request)
            guard let text, let form = ConsoleController.decodeForm(ActionForm.self, text),
                console.signer.csrfMatches(form.csrf, nonce: session.nonce)
            else {
                return console.render(
                    "Refused", MessagePage("The form was not sent from this console (no valid CSRF token): nothing was done."), session: session,
                    status: .forbidden)
            }
            guard !needsAdmin || session.role == .admin else {
                return console.render(
                    "Refused", MessagePage("Your role (\(session.role.rawValue)) may look but not act."), session: session, status: .forbidden)
            }
            admitted.admitted = .console(session, form: text)
            do {
                return try await next(request, admitted)
            } catch let error as StorekeeperError {
                return console.render("Not done", MessagePage(error.message), session: session, status: error.status)
            }
        }
    }
}

/// The context of a console page or action: the operator's session and, for an action, the
/// form's text.
struct ConsoleRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let session: ConsoleSession
    /// An action's form, as sent (empty on a page).
    let form: String
    let source: String?

    init(context: StorekeeperRequestContext) throws {
        guard case .console(let session, let form) = context.admitted else {
            throw StorekeeperError(.unauthorized, "sign in to the console first")
        }
        coreContext = context.coreContext
        self.session = session
        self.form = form
        source = context.source
    }

    /// The operator as the audit log names them, from the address of this request.
    var actor: AuditActor { AuditActor(name: "console:\(session.name)", reason: "", from: source) }
}
