import Hummingbird
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// The context of a route open to apps: the backend's secret key or a client key admitted by
/// `ClientGate` (`AppKeyAuthentication.callers`).
struct CallerRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let caller: Caller
    let source: String?

    init(context: StorekeeperRequestContext) throws {
        guard case .caller(let caller) = context.admitted else { throw Self.unadmitted }
        coreContext = context.coreContext
        self.caller = caller
        source = context.source
    }

    /// Thrown only if a group's credential middleware is missing: the route is then refused,
    /// never answered unauthenticated.
    static var unadmitted: StorekeeperError { StorekeeperError(.unauthorized, "missing API key") }
}

/// The context of a route for the app's backend alone: its secret key
/// (`AppKeyAuthentication.backend`).
struct BackendRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let app: AppConfiguration
    let source: String?

    init(context: StorekeeperRequestContext) throws {
        guard case .caller(.backend(let app)) = context.admitted else { throw CallerRequestContext.unadmitted }
        coreContext = context.coreContext
        self.app = app
        source = context.source
    }
}

/// The context of an operator's route under `v1/admin`, admitted by `AdminGate` (credential,
/// role, app in the path).
struct AdminRequestContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let principal: AdminPrincipal
    let source: String?

    init(context: StorekeeperRequestContext) throws {
        guard case .admin(let principal) = context.admitted else {
            throw StorekeeperError(.unauthorized, "missing admin credential: send 'Authorization: Bearer <admin key or admin token>'")
        }
        coreContext = context.coreContext
        self.principal = principal
        source = context.source
    }
}
