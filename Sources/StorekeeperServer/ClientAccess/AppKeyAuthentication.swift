import Foundation
import HTTPTypes
import Hummingbird
import StorekeeperErrors
import StorekeeperWire

/// Admits a request to an app route group before any of its routes runs: the app's secret key
/// (the backend, any user), or, where the group is open to apps, a client key admitted by
/// `ClientGate` (user token, rate limits). Every key is compared, matched or not, in constant
/// time. The admitted caller goes in the context, where the group's typed context reads it.
struct AppKeyAuthentication: RouterMiddleware {
    typealias Context = StorekeeperRequestContext

    /// Whether a client key is admitted, or recognised and refused (403).
    enum Callers: Sendable {
        case backendOnly
        case backendOrClient
    }

    let callers: Callers
    let context: ServerContext

    func handle(_ request: Request, context requestContext: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var admitted = requestContext
        admitted.admitted = .caller(try await admit(request, source: requestContext.source))
        return try await next(request, admitted)
    }

    func admit(_ request: Request, source: String?) async throws -> Caller {
        let accepted = callers == .backendOnly ? "app API key" : "app API key or client key"
        guard let token = ServerContext.token(request) else {
            throw StorekeeperError(.unauthorized, "missing API key: send 'Authorization: Bearer <\(accepted)>'")
        }
        let (backend, client) = context.match(token)
        if let backend { return .backend(backend) }
        if let client {
            guard callers == .backendOrClient else {
                throw StorekeeperError(.clientKeyNotAllowed, "this route takes the app's secret API key, not a client key")
            }
            return try await context.clientGate.admit(client, request: request, source: source, now: context.now())
        }
        throw StorekeeperError(.unauthorized, "unknown API key")
    }
}
