import Hummingbird
import NIOCore
import StorekeeperDomain

/// The request context of every route: Hummingbird's core, the peer's address, the client's
/// address resolved from it, and what the route's credential admitted. A route that needs a
/// credential is registered on a group whose typed context (`CallerRequestContext`,
/// `BackendRequestContext`, `AdminRequestContext`, `ConsoleRequestContext`) can only be made from an admitted request,
/// so a route cannot run without the check its group stands for.
struct StorekeeperRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The client's address: the peer, or the one a trusted proxy's `X-Forwarded-For` names.
    /// Set by `ErrorMiddleware` before any gate or route runs; the client gate limits
    /// unauthenticated and failed calls by it (a flood of bad tokens must not spend the budget
    /// that the app's real users share), and audit entries record it.
    var source: String?
    /// Set by the credential middleware of the route's group (`AppKeyAuthentication`,
    /// `AdminGate`, `ConsoleAdmission`); nil on an open route.
    var admitted: Admission?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// What a request's credential was admitted as.
enum Admission: Sendable {
    /// An app route's caller: the app's backend, or its client with the user a token named.
    case caller(Caller)
    /// An operator under `v1/admin`.
    case admin(AdminPrincipal)
    /// An operator signed in to the console, with an action's form text (empty on a page).
    case console(ConsoleSession, form: String)
}
