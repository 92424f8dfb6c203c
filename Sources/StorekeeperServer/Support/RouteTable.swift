import HTTPTypes
import Hummingbird
import Synchronization

/// The router every controller registers on. It remembers which methods each path takes so that
/// a known path asked with any other method answers 405 with `Allow` (Hummingbird alone answers
/// 404, which tells a client its URL is wrong when only its method is).
struct RouteTable: RouterMethods {
    typealias Context = StorekeeperRequestContext

    let router: Router<StorekeeperRequestContext>
    let known = KnownRoutes()
    /// Admits every route under `v1/admin` before it runs.
    let adminGate: AdminGate
    /// Makes the credential middleware of app route groups.
    let context: ServerContext

    init(router: Router<StorekeeperRequestContext>, context: ServerContext) {
        self.router = router
        self.context = context
        adminGate = AdminGate(context: context)
    }

    /// Routes under `path` open to apps: the backend's secret key, or a client key its gate
    /// admits. Their context carries the caller.
    /// A client's answers are signed (`ResponseSigning`).
    func callers(_ path: RouterPath) -> RouterGroup<CallerRequestContext> {
        appKeyGroup(path, .backendOrClient)
            .add(
                middleware: ResponseSigning(
                    signers: context.clientGate.signers, maxBodyBytes: context.configuration.maxBodyBytes, now: context.now)
            )
            .group(context: CallerRequestContext.self)
    }

    /// Routes under `path` for an app's backend alone: its secret key. Their context carries the app.
    func backend(_ path: RouterPath) -> RouterGroup<BackendRequestContext> {
        appKeyGroup(path, .backendOnly).group(context: BackendRequestContext.self)
    }

    /// Routes under `path`, which must lie under `v1/admin`: `adminGate` admits every request
    /// before it reaches one. Their context carries the operator.
    func admin(_ path: RouterPath) -> RouterGroup<AdminRequestContext> {
        precondition(Self.isAdmin(path), "admin routes live under v1/admin")
        return group(path, context: AdminRequestContext.self)
    }

    private func appKeyGroup(_ path: RouterPath, _ callers: AppKeyAuthentication.Callers) -> RouterGroup<Context> {
        group(path).add(middleware: AppKeyAuthentication(callers: callers, context: context))
    }

    /// Whether `path` is an operator's route, which `adminGate` guards.
    static func isAdmin(_ path: RouterPath) -> Bool {
        path.components.count >= 2 && path.components[0].description == "v1" && path.components[1].description == "admin"
    }

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        known.record(path, method)
        if Self.isAdmin(path) {
            router.on(path, method: method, responder: AdminGatedResponder(gate: adminGate, route: path, wrapped: responder))
        } else {
            router.on(path, method: method, responder: responder)
        }
        return self
    }

    @discardableResult
    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }
}

/// Every path the router serves with its methods, filled while routes are registered and read
/// by the error middleware afterwards.
final class KnownRoutes: Sendable {
    private let state = Mutex<[(RouterPath, Set<HTTPRequest.Method>)]>([])

    func record(_ path: RouterPath, _ method: HTTPRequest.Method) {
        state.withLock { entries in
            if let index = entries.firstIndex(where: { $0.0 == path }) {
                entries[index].1.insert(method)
            } else {
                entries.append((path, [method]))
            }
        }
    }

    /// Every route registered so far: its pattern and methods, in the order registered.
    var all: [(path: RouterPath, methods: Set<HTTPRequest.Method>)] { state.withLock { $0 }.map { (path: $0.0, methods: $0.1) } }

    /// The methods a path takes (HEAD wherever GET is: the router answers it), or nil when no
    /// route has this path.
    func allowedMethods(path: String) -> [String]? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        let matching = state.withLock { $0 }.filter { pattern, _ in
            pattern.count == segments.count && zip(pattern, segments).allSatisfy { element, segment in element ~= segment }
        }
        guard !matching.isEmpty else { return nil }
        var allowed = Set(matching.flatMap { $0.1.map(\.rawValue) })
        if allowed.contains("GET") { allowed.insert("HEAD") }
        return allowed.sorted()
    }
}

/// One route as registered: its method and path pattern (`/v1/subscribers/{appUserId}`).
public struct RegisteredRoute: Sendable, Hashable, CustomStringConvertible {
    public var method: String
    public var path: String
    public var description: String { "\(method) \(path)" }
}

/// Where `StorekeeperApplication.build` lists every route it registered: a test compares the
/// list with the credential each route must need, so a route added without one is noticed.
public final class RouteListing: Sendable {
    private let state = Mutex<[RegisteredRoute]>([])

    public init() {}

    public var routes: [RegisteredRoute] { state.withLock { $0 } }

    func fill(from known: KnownRoutes) {
        let routes = known.all.flatMap { path, methods in
            methods.map { RegisteredRoute(method: $0.rawValue, path: path.description) }
        }
        state.withLock { $0 = routes.sorted { ($0.path, $0.method) < ($1.path, $1.method) } }
    }
}
