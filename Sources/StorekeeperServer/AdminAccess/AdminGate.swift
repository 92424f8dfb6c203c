import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Admits every request under `v1/admin` before its route runs: the credential (the configured
/// admin key, or a named token looked up on each request, so a revocation holds at once on every
/// process), then the role the route needs (`AdminAccessRule`) and the app in its path. Because
/// `RouteTable` wraps every admin route in it, a route cannot forget it.
struct AdminGate: Sendable {
    let context: ServerContext

    /// A named token's prefix: tells a token from the admin key and from app keys at a glance,
    /// and lets secret scanners find one that leaked.
    static let tokenPrefix = "skadmin_"

    /// The principal the request is made by, allowed to reach this route; throws 401, 403 or 429.
    func admit(_ request: Request, route: RouterPath, parameters: Parameters, source: String?) async throws -> AdminPrincipal {
        let guesses = "admin:\(source ?? "unknown")"
        let limit = AttemptLimit.adminCredentials(ratePerSecond: context.configuration.adminKeyGuessesPerSecond)
        let now = context.now()
        // An address that keeps sending wrong credentials is refused before any is compared
        // (so a guess gets no answer, right or wrong) until its bucket refills. Counted in the
        // database: every process refuses it at once.
        if let until = try await context.useCases.attempts.blockedUntil(guesses, limit: limit, now: now) {
            failure("refused_address")
            throw StorekeeperError.tooManyAttempts("too many wrong admin credentials from this address", until: until, now: now)
        }
        guard let token = ServerContext.token(request) else {
            failure("missing")
            throw StorekeeperError(.unauthorized, "missing admin credential: send 'Authorization: Bearer <admin key or admin token>'")
        }
        let principal: AdminPrincipal
        if KeyComparison.equal(context.configuration.adminKey, token) {
            principal = .adminKey
        } else if token.hasPrefix(Self.tokenPrefix),
            let found = try await context.useCases.adminTokens.principal(secretHash: Self.hash(token), now: now)
        {
            principal = found
        } else {
            let known = context.match(token)
            if known.client != nil {
                failure("client_key")
                throw StorekeeperError(.clientKeyNotAllowed, "admin routes take the admin key or an admin token")
            }
            // An app's own key sent by mistake is not a guess; any other credential is.
            if known.backend == nil { try await context.useCases.attempts.record(guesses, limit: limit, now: now) }
            failure(known.backend == nil ? "wrong_credential" : "app_key")
            throw StorekeeperError(.unauthorized, "wrong admin key, or an admin token that is unknown, revoked or expired")
        }
        let segments = Self.segments(route)
        let needed = AdminAccessRule.required(method: request.method.rawValue, segments: segments)
        let app = try Self.app(route, parameters)
        guard principal.may(needed, app: app) || (AdminAccessRule.isOwnView(segments: segments) && principal.role.allows(needed)) else {
            failure("refused")
            if !principal.role.allows(needed) {
                throw StorekeeperError(
                    .forbidden, "\(principal.name) is \(principal.role.rawValue); this route needs \(needed.rawValue)")
            }
            throw StorekeeperError(
                .forbidden,
                app.map { "\(principal.name) may not reach app '\($0)'" } ?? "\(principal.name) is limited to some apps; this route is every app's")
        }
        return principal
    }

    /// Records a change the route's use case keeps no audit entry of, once it has succeeded. The
    /// change is made by then: a failure to record it is logged and counted, not answered.
    func audit(
        _ request: Request, route: RouterPath, parameters: Parameters, source: String?, response: Response, principal: AdminPrincipal
    ) async {
        let segments = Self.segments(route)
        guard (200..<300).contains(Int(response.status.code)),
            AdminAccessRule.needsGateAudit(method: request.method.rawValue, segments: segments)
        else { return }
        let actor = AuditActor(
            name: principal.name, reason: request.headers[AdminInput.reasonHeader] ?? "",
            declared: request.headers[AdminInput.actorHeader], from: source)
        do {
            try await context.useCases.adminTokens.recordChange(
                id: AuditEntry.freshId(), appId: try? Self.app(route, parameters), method: request.method.rawValue,
                path: request.uri.path, route: route.description, status: Int(response.status.code), actor: actor, now: context.now())
        } catch {
            context.logger.error("an admin change was made but not audited", metadata: ["route": "\(route)", "error": "\(error)"])
            context.metrics.increment("storekeeper_admin_audit_failures_total")
        }
    }

    /// A route pattern's segments after `v1/admin`.
    static func segments(_ route: RouterPath) -> [String] { Array(route.components.map(\.description).dropFirst(2)) }

    /// The app in the path, if the route is an app's.
    static func app(_ route: RouterPath, _ parameters: Parameters) throws -> String? {
        route.components.contains { $0.description == "{app}" } ? try parameters.decoded("app") : nil
    }

    /// A credential refused, by why, in `/metrics` (`storekeeper_admin_counted_attempts_total`).
    private func failure(_ reason: String) {
        context.metrics.increment("storekeeper_admin_counted_attempts_total", labels: ["reason": reason])
    }

    /// What is stored of a token: SHA-256 of its text, in hex.
    static func hash(_ token: String) -> String {
        SHA256.hash(data: Data(token.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// A new token's text: the prefix and 32 random bytes, base64url.
    static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let text = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        return tokenPrefix + text
    }
}

/// A route's responder behind `AdminGate`: the operator it admits goes in the context, where
/// the route's `AdminRequestContext` reads it.
struct AdminGatedResponder<Wrapped: HTTPResponder>: HTTPResponder where Wrapped.Context == StorekeeperRequestContext {
    let gate: AdminGate
    let route: RouterPath
    let wrapped: Wrapped

    func respond(to request: Request, context: StorekeeperRequestContext) async throws -> Response {
        var admitted = context
        let principal = try await gate.admit(request, route: route, parameters: context.parameters, source: context.source)
        admitted.admitted = .admin(principal)
        let response = try await wrapped.respond(to: request, context: admitted)
        await gate.audit(request, route: route, parameters: context.parameters, source: context.source, response: response, principal: principal)
        return response
    }
}
