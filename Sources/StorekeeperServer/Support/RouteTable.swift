import HTTPTypes
import Hummingbird
import Synchronization

/// The router every controller registers on. It remembers which methods each path takes so that
/// a known path asked with another method answers 405 with `Allow` (Hummingbird alone answers
/// 404, which tells a client its URL is wrong when only its method is).
struct RouteTable: RouterMethods {
    typealias Context = BasicRequestContext

    let router: Router<BasicRequestContext>
    private let methods = SharedMethods()

    init(router: Router<BasicRequestContext>) { self.router = router }

    @discardableResult
    func on<Responder: HTTPResponder>(_ path: RouterPath, method: HTTPRequest.Method, responder: Responder) -> Self
    where Responder.Context == Context {
        methods.record(path, method)
        router.on(path, method: method, responder: responder)
        return self
    }

    @discardableResult
    func add(middleware: any MiddlewareProtocol<Request, Response, Context>) -> Self {
        router.add(middleware: middleware)
        return self
    }

    /// Registers the 405 answers; call once, after every controller registered its routes.
    func answerUnknownMethods() {
        let candidates: [HTTPRequest.Method] = [.get, .head, .post, .put, .delete, .patch, .options, .trace]
        for (path, allowed) in methods.all() {
            let allow = allowed.map(\.rawValue).sorted().joined(separator: ", ")
            for method in candidates where !allowed.contains(method) {
                router.on(path, method: method) { request, _ -> Response in
                    throw StorekeeperError(
                        .methodNotAllowed, "\(request.method.rawValue) is not allowed on \(path); allowed: \(allow)",
                        headers: [.allow: allow])
                }
            }
        }
    }

    private final class SharedMethods: Sendable {
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

        func all() -> [(RouterPath, Set<HTTPRequest.Method>)] { state.withLock { $0 } }
    }
}
