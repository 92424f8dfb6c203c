import Foundation
import HTTPTypes
import Hummingbird
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Operators' named tokens and the audit log. Only translation: `ManageAdminTokens` decides;
/// `AdminGate` has already admitted the caller (tokens: `admin` on every app).
struct AdminTokensController {
    let context: ServerContext

    /// Entries a page holds at most, as JSON or exported.
    static let auditPageLimit = 10_000
    /// How long a rotated token keeps working unless the request says: a day.
    static let defaultOverlapSeconds = 86_400
    static let maximumOverlapSeconds = 30 * 86_400

    struct Issued: Encodable {
        var token: AdminToken
        /// Shown once: only its hash is kept.
        var secret: String
        var previous: AdminToken?
    }

    /// `GET /v1/admin/whoami`: the credential as the server sees it, and every admin route with
    /// the role it needs and whether this credential may call it (on its apps).
    struct Identity: Encodable {
        struct Route: Encodable {
            var method: String
            var path: String
            var needs: AdminRole
            /// On the apps this credential reaches (every app's route, for one of all apps).
            var allowed: Bool
        }
        var name: String
        var role: AdminRole
        /// nil: every app.
        var apps: [String]?
        var routes: [Route]
    }

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin")
        let known = router.known
        admin.get("whoami") { request, ctx in
            let principal = ctx.principal
            var routes: [Identity.Route] = []
            for (path, methods) in known.all where RouteTable.isAdmin(path) {
                let segments = AdminGate.segments(path)
                for method in methods.map(\.rawValue).sorted() {
                    let needs = AdminAccessRule.required(method: method, segments: segments)
                    let ofApp = path.components.contains { $0.description == "{app}" }
                    let allowed =
                        principal.role.allows(needs)
                        && (principal.apps == nil || ofApp || AdminAccessRule.isOwnView(segments: segments))
                    routes.append(Identity.Route(method: method, path: path.description, needs: needs, allowed: allowed))
                }
            }
            return try StorekeeperJSON.response(
                Identity(name: principal.name, role: principal.role, apps: principal.apps.map { $0.sorted() }, routes: routes))
        }
        admin.get("tokens") { request, _ in
            return try StorekeeperJSON.response(["tokens": try await context.useCases.adminTokens.tokens()])
        }
        admin.post("tokens") { request, ctx in
            struct Body: Decodable {
                var name: String
                var role: AdminRole
                var apps: [String]?
            }
            let data = try await context.body(request)
            try AdminInput.refuseFields(data, except: ["name", "role", "apps"], note: nil)
            let body = try StorekeeperJSON.decode(Body.self, from: data)
            let secret = AdminGate.newSecret()
            if let unknown = body.apps?.first(where: { id in !context.apps.contains { $0.id == id } }) {
                throw StorekeeperError(.notFound, "no app '\(unknown.prefix(100))'")
            }
            switch try await context.useCases.adminTokens.create(
                ManageAdminTokens.NewToken(name: body.name, role: body.role, apps: body.apps), knownApps: Set(context.apps.map(\.id)),
                secretHash: AdminGate.hash(secret), actor: try AdminInput.actor(request, ctx), now: context.now())
            {
            case .created(let token): return try StorekeeperJSON.response(Issued(token: token, secret: secret), status: .created)
            case .invalid(let problems): throw StorekeeperError(.invalidRequest, problems.joined(separator: "; "))
            }
        }
        admin.post("tokens/:id/revoke") { request, ctx in
            let id = try ctx.parameters.decoded("id")
            let outcome = try await context.useCases.adminTokens.revoke(id: id, actor: try AdminInput.actor(request, ctx), now: context.now())
            return try answer(outcome, id: id, secret: nil)
        }
        admin.post("tokens/:id/rotate") { request, ctx in
            let id = try ctx.parameters.decoded("id")
            let overlap = try QueryInput(request).integer("overlapSeconds", in: 0...Self.maximumOverlapSeconds) ?? Self.defaultOverlapSeconds
            let secret = AdminGate.newSecret()
            let outcome = try await context.useCases.adminTokens.rotate(
                id: id, overlapSeconds: overlap, secretHash: AdminGate.hash(secret), actor: try AdminInput.actor(request, ctx), now: context.now())
            return try answer(outcome, id: id, secret: secret)
        }
        admin.get("audit") { request, _ in
            return try await audit(request, appIds: nil)
        }
        router.admin("v1/admin/apps/:app").get("audit") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await audit(request, appIds: [app.id])
        }
    }

    private func answer(_ outcome: ManageAdminTokens.ChangeOutcome, id: String, secret: String?) throws -> Response {
        switch outcome {
        case .changed(let token, let replacement?):
            return try StorekeeperJSON.response(Issued(token: replacement, secret: secret ?? "", previous: token), status: .created)
        case .changed(let token, nil): return try StorekeeperJSON.response(token)
        case .notFound: throw StorekeeperError(.notFound, "no admin token '\(id)'")
        case .inactive: throw StorekeeperError(.conflict, "admin token '\(id)' is revoked or expired already")
        }
    }

    /// A page of the audit log, filtered (`actor`, `action`, `appUserId`, `since`, `until`),
    /// as JSON with `nextCursor`, or exported as CSV or JSON lines (`format`) with the next
    /// cursor in `Storekeeper-Next-Cursor`.
    private func audit(_ request: Request, appIds: [String]?) async throws -> Response {
        let input = QueryInput(request)
        let format = try input.oneOf("format", ["json", "csv", "jsonl"]) ?? "json"
        let after = Int64(try input.integer("after", in: 0...Int.max) ?? 0)
        let limit = try input.integer("limit", in: 1...Self.auditPageLimit) ?? 100
        let query = AuditQuery(
            appIds: appIds, actor: input.string("actor"), action: input.string("action"), appUserId: input.string("appUserId"),
            since: try input.date("since"), until: try input.date("until"), after: after, limit: limit)
        let entries = try await context.useCases.adminTokens.audit(query)
        let next = entries.last?.cursor ?? after
        struct Page: Encodable {
            struct Entry: Encodable {
                var cursor: Int64
                var entry: AuditEntry
            }
            var entries: [Entry]
            var nextCursor: Int64
        }
        let page = Page(entries: entries.map { Page.Entry(cursor: $0.cursor, entry: $0.entry) }, nextCursor: next)
        switch format {
        case "csv":
            return Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8", AuditCSV.nextCursorHeader: String(next)],
                body: .init(byteBuffer: ByteBuffer(string: AuditCSV.render(entries))))
        case "jsonl":
            let encoder = StorekeeperJSON.makeEncoder()
            var text = ""
            for entry in page.entries { text += String(decoding: try encoder.encode(entry), as: UTF8.self) + "\n" }
            return Response(
                status: .ok, headers: [.contentType: "application/jsonl", AuditCSV.nextCursorHeader: String(next)],
                body: .init(byteBuffer: ByteBuffer(string: text)))
        default:
            return try StorekeeperJSON.response(page)
        }
    }
}

/// The audit log as CSV: one row per entry, RFC 4180 quoting, formula-like text kept as text.
enum AuditCSV {
    static let nextCursorHeader = HTTPField.Name("Storekeeper-Next-Cursor")!
    static let header = ["cursor", "at", "app_id", "actor", "declared_actor", "from", "action", "app_user_id", "subject", "reason"]

    static func render(_ entries: [RecordedAuditEntry]) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var lines = [header.joined(separator: ",")]
        for recorded in entries {
            let e = recorded.entry
            let fields = [
                String(recorded.cursor), f.string(from: e.at), e.appId, e.actor, e.declaredActor ?? "", e.from ?? "", e.action,
                e.appUserId ?? "", e.subject, e.reason,
            ]
            lines.append(fields.map(CSVField.quote).joined(separator: ","))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
