import AppStoreSimulator
import Foundation
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Operators' named tokens over real HTTP: what a token of each role and app may reach on every
/// admin route the server has, who the audit log names, and a revocation seen by every process.
@Suite("admin tokens: roles, apps, the audit log's actor, revocation")
struct AdminTokenRouteTests {
    static let otherApp = AppConfiguration(
        id: "other", bundleId: "com.example.other", sharedSecret: "s", apiKey: "other-app-key-0123456789",
        products: [Product(productId: "gold", type: .nonConsumable)])

    static func admin(_ stack: LocalStack) -> [String: String] { ["Authorization": "Bearer \(stack.configuration.adminKey)"] }

    /// Makes a token with the admin key; returns its id and secret.
    static func token(
        _ http: HTTPJSONClient, _ stack: LocalStack, name: String, role: String, apps: [String]?, headers: [String: String]? = nil
    ) async throws -> (id: String, secret: String) {
        var body: [String: Any] = ["name": name, "role": role]
        if let apps { body["apps"] = apps }
        let made = try await http.send(
            .POST, "/v1/admin/tokens", headers: headers ?? admin(stack), body: try JSONSerialization.data(withJSONObject: body))
        #expect(made.status == 201, "\(made.text)")
        let token = try #require(made.json["token"] as? [String: Any])
        return (try #require(token["id"] as? String), try #require(made.json["secret"] as? String))
    }

    static func bearer(_ secret: String) -> [String: String] { ["Authorization": "Bearer \(secret)"] }

    /// A concrete path for a route pattern: `{app}` is `app`, any other capture a made-up id.
    static func path(_ pattern: String, app: String) -> String {
        pattern.split(separator: "/").map { segment in
            segment == "{app}" ? app : segment.hasPrefix("{") ? "zz_\(segment.dropFirst().dropLast())" : String(segment)
        }.reduce("") { $0 + "/" + $1 }
    }

    @Test("a read-only token of one app is refused on every change and every other app; support reaches only its own changes")
    func everyRoute() async throws {
        try await withStack(configure: { $0.apps.append(Self.otherApp) }) { stack in
            let http = stack.api.http
            let reader = try await Self.token(http, stack, name: "reader", role: "read_only", apps: ["demo"])
            let helpdesk = try await Self.token(http, stack, name: "helpdesk", role: "support", apps: ["demo"])
            let shown = try await http.send(.GET, "/v1/admin/whoami", headers: Self.admin(stack))
            #expect(shown.status == 200 && shown.json["name"] as? String == "admin key" && shown.json["role"] as? String == "admin")
            let routes = (shown.json["routes"] as? [[String: Any]]) ?? []
            // Every admin route the server registered, each with the role it needs.
            #expect(routes.count >= 70, "\(routes.count) routes")
            #expect(routes.allSatisfy { $0["allowed"] as? Bool == true }, "the admin key reaches everything")
            var checked = (changes: 0, otherApp: 0, ownReads: 0, support: 0)
            for route in routes {
                let method = HTTPMethod(rawValue: route["method"] as? String ?? "")
                let pattern = try #require(route["path"] as? String)
                let needs = try #require(route["needs"] as? String)
                let ofApp = pattern.contains("{app}")
                let own = try await http.send(method, Self.path(pattern, app: "demo"), headers: Self.bearer(reader.secret), body: Data("{}".utf8))
                if pattern == "/v1/admin/whoami" {
                    #expect(own.status == 200, "a token may always see itself")
                } else if method != .GET || !ofApp || needs == "admin" {
                    #expect(own.status == 403 && own.errorCode == "forbidden", "reader: \(method) \(pattern): \(own.status) \(own.text)")
                    if method != .GET { checked.changes += 1 }
                } else {
                    #expect(own.status != 403 && own.status != 401, "reader: \(method) \(pattern) on its own app: \(own.text)")
                    checked.ownReads += 1
                }
                if ofApp {
                    let other = try await http.send(
                        method, Self.path(pattern, app: "other"), headers: Self.bearer(reader.secret), body: Data("{}".utf8))
                    #expect(other.status == 403 && other.errorCode == "forbidden", "reader: \(method) \(pattern) on another app: \(other.text)")
                    checked.otherApp += 1
                }
                guard method != .GET, ofApp else { continue }
                let support = try await http.send(
                    method, Self.path(pattern, app: "demo"), headers: Self.bearer(helpdesk.secret), body: Data("{}".utf8))
                if needs == "support" || needs == "read_only" {
                    #expect(support.status != 403 && support.status != 401, "helpdesk: \(method) \(pattern): \(support.text)")
                    checked.support += 1
                } else {
                    #expect(support.status == 403 && support.errorCode == "forbidden", "helpdesk: \(method) \(pattern): \(support.text)")
                }
            }
            #expect(checked.changes >= 40 && checked.otherApp >= 60 && checked.ownReads >= 20 && checked.support >= 8, "\(checked)")
            // Tokens are admin business: a support token cannot make one.
            let escalation = try await http.send(
                .POST, "/v1/admin/tokens", headers: Self.bearer(helpdesk.secret), body: Data(#"{"name":"mine","role":"admin"}"#.utf8))
            #expect(escalation.status == 403, "\(escalation.text)")
            let me = try await http.send(.GET, "/v1/admin/whoami", headers: Self.bearer(helpdesk.secret))
            #expect(me.json["name"] as? String == "token:helpdesk" && me.json["apps"] as? [String] == ["demo"])
        }
    }

    @Test("the audit log names the token for each kind of change, with the caller's own name and address beside it; paged, filtered, exported")
    func auditActor() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let ops = try await Self.token(http, stack, name: "ops", role: "admin", apps: nil)
            var headers = Self.bearer(ops.secret)
            headers["Storekeeper-Actor"] = "maria@example.com"
            headers["Storekeeper-Reason"] = "ticket 42"
            func send(_ method: HTTPMethod, _ path: String, _ body: String? = nil) async throws {
                let reply = try await http.send(method, path, headers: headers, body: body.map { Data($0.utf8) })
                #expect((200..<300).contains(reply.status), "\(method) \(path): \(reply.text)")
            }
            let app = "/v1/admin/apps/demo"
            try await send(
                .PUT, "\(app)/products/com.example.extra", #"{"productId":"com.example.extra","type":"non_consumable","status":"ready_for_sale"}"#)
            try await send(.PUT, "\(app)/entitlements/extra", #"{"products":["com.example.extra"]}"#)
            try await send(.POST, "\(app)/subscribers/alice/promotional-grants", #"{"entitlementId":"extra","actor":"maria","reason":"sorry"}"#)
            try await send(.PUT, "\(app)/subscribers/alice/suspension", #"{"reason":"fraud"}"#)
            try await send(.DELETE, "\(app)/subscribers/alice/suspension")
            try await send(.POST, "\(app)/webhooks", #"{"url":"https://hooks.example.com/in"}"#)
            try await send(.DELETE, "\(app)/entitlements/extra")
            try await send(.PUT, "\(app)/offerings/spring", #"{"packages":[{"id":"$annual","productId":"com.example.season.pass"}]}"#)
            let bob = try await http.send(
                .PATCH, "/v1/subscribers/bob/attributes", headers: DemoCallers.backend, body: Data(#"{"displayName":"Bob"}"#.utf8))
            #expect(bob.status == 200, "\(bob.text)")
            try await send(.DELETE, "\(app)/subscribers/bob")
            let helper = try await Self.token(http, stack, name: "helper", role: "read_only", apps: ["demo"], headers: headers)
            try await send(.POST, "/v1/admin/tokens/\(helper.id)/revoke")

            let log = try await http.send(.GET, "\(app)/audit", headers: Self.admin(stack))
            let entries = ((log.json["entries"] as? [[String: Any]]) ?? []).compactMap { $0["entry"] as? [String: Any] }
            let actions = entries.compactMap { $0["action"] as? String }
            #expect(
                actions == [
                    "admin_change", "entitlement_saved", "promotional_grant", "access_suspended", "access_restored", "admin_change",
                    "entitlement_deleted", "offering_saved", "customer_deleted",
                ], "\(log.text)")
            #expect(entries.allSatisfy { $0["actor"] as? String == "token:ops" && $0["from"] as? String == "127.0.0.1" }, "\(log.text)")
            #expect(entries[0]["subject"] as? String == "PUT /v1/admin/apps/demo/products/com.example.extra")
            #expect(entries[0]["declaredActor"] as? String == "maria@example.com" && entries[0]["reason"] as? String == "ticket 42")
            #expect(entries[2]["declaredActor"] as? String == "maria", "a grant's body names the operator")
            // What was there before: nothing for a new entitlement; the definition for its deletion.
            #expect(entries[1]["before"] == nil && (entries[1]["change"] as? [String: Any])?["products"] as? [String] == ["com.example.extra"])
            #expect(entries[6]["change"] == nil && (entries[6]["before"] as? [String: Any])?["products"] as? [String] == ["com.example.extra"])

            let tokens = try await http.send(.GET, "/v1/admin/audit?actor=token:ops", headers: Self.admin(stack))
            let tokenActions = ((tokens.json["entries"] as? [[String: Any]]) ?? []).compactMap {
                ($0["entry"] as? [String: Any])?["action"] as? String
            }
            #expect(tokenActions.filter { $0.hasPrefix("admin_token") } == ["admin_token_created", "admin_token_revoked"], "\(tokens.text)")
            #expect(tokenActions.count == actions.count + 2, "the log of every app holds the app's entries and the tokens'")

            let page = try await http.send(.GET, "\(app)/audit?action=admin_change&limit=1", headers: Self.admin(stack))
            let cursor = try #require(page.json["nextCursor"] as? Int)
            #expect((page.json["entries"] as? [[String: Any]])?.count == 1)
            let next = try await http.send(.GET, "\(app)/audit?action=admin_change&after=\(cursor)", headers: Self.admin(stack))
            let second = ((next.json["entries"] as? [[String: Any]]) ?? []).compactMap { ($0["entry"] as? [String: Any])?["subject"] as? String }
            #expect(second == ["POST /v1/admin/apps/demo/webhooks"], "\(next.text)")

            let csv = try await http.send(.GET, "\(app)/audit?format=csv&appUserId=alice", headers: Self.admin(stack))
            let lines = csv.text.split(separator: "\r\n")
            #expect(csv.status == 200 && lines.count == 4 && lines[0].hasPrefix("cursor,at,app_id,actor,declared_actor,from,action"), "\(csv.text)")
            #expect(csv.headers["storekeeper-next-cursor"] != nil || csv.headers["Storekeeper-Next-Cursor"] != nil)
            let jsonl = try await http.send(.GET, "\(app)/audit?format=jsonl", headers: Self.admin(stack))
            #expect(jsonl.text.split(separator: "\n").count == actions.count, "\(jsonl.text)")
            let bad = try await http.send(.GET, "\(app)/audit?format=xml", headers: Self.admin(stack))
            #expect(bad.status == 400 && bad.errorCode == "invalid_request")
        }
    }

    @Test(
        "a revoked token is refused by the next request on every process; a rotated one keeps working for its overlap; failures are counted and shared",
        arguments: WebhookTests.backends)
    func revocationEverywhere(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "tokens") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
        }) { stack in
            stack.clock.freeze()
            let http = stack.api.http
            // A second process: its own connections to the database (PostgreSQL), or the same file.
            let second: HTTPJSONClient
            let stopSecond: @Sendable () async throws -> Void
            if let database {
                let other = try await stack.startIndependentServer(databasePath: database, runWorkers: false)
                (second, stopSecond) = (other.api.http, other.stop)
            } else {
                let other = try await stack.startAnotherServer(configuration: stack.configuration)
                (second, stopSecond) = (HTTPJSONClient(httpClient: stack.httpClient, baseURL: other.url), other.stop)
            }
            let ci = try await Self.token(http, stack, name: "ci", role: "read_only", apps: nil)
            #expect(try await second.send(.GET, "/v1/admin/apps/demo/products", headers: Self.bearer(ci.secret)).status == 200)

            let rotated = try await http.send(.POST, "/v1/admin/tokens/\(ci.id)/rotate?overlapSeconds=60", headers: Self.admin(stack))
            #expect(rotated.status == 201, "\(rotated.text)")
            let fresh = try #require(rotated.json["secret"] as? String)
            #expect(try await second.send(.GET, "/v1/admin/apps/demo/products", headers: Self.bearer(ci.secret)).status == 200, "overlap")
            #expect(try await second.send(.GET, "/v1/admin/apps/demo/products", headers: Self.bearer(fresh)).status == 200)
            stack.clock.advance(by: 61)
            let expired = try await second.send(.GET, "/v1/admin/apps/demo/products", headers: Self.bearer(ci.secret))
            #expect(expired.status == 401, "\(expired.text)")

            let newId = try #require((rotated.json["token"] as? [String: Any])?["id"] as? String)
            #expect(try await http.send(.POST, "/v1/admin/tokens/\(newId)/revoke", headers: Self.admin(stack)).status == 200)
            let refused = try await second.send(.GET, "/v1/admin/apps/demo/products", headers: Self.bearer(fresh))
            #expect(refused.status == 401 && refused.errorCode == "unauthorized", "\(refused.text)")
            let again = try await http.send(.POST, "/v1/admin/tokens/\(newId)/revoke", headers: Self.admin(stack))
            #expect(again.status == 409, "\(again.text)")
            let listed = try await http.send(.GET, "/v1/admin/tokens", headers: Self.admin(stack))
            #expect(!listed.text.contains(fresh) && !listed.text.contains(ci.secret), "secrets are shown once, never listed")

            let metrics = try await second.send(.GET, "/metrics").text
            #expect(metrics.contains(#"storekeeper_admin_counted_attempts_total{reason="wrong_credential"} 2"#), "\(metrics)")
            // Guesses spread over both processes share one budget: ten from this address in all
            // (the two refused tokens above among them), then neither process compares a key.
            for guess in 0..<4 {
                #expect(try await http.send(.GET, "/v1/admin/whoami", headers: Self.bearer("skadmin_guess\(guess)")).status == 401)
                #expect(try await second.send(.GET, "/v1/admin/whoami", headers: Self.bearer("guess\(guess)")).status == 401)
            }
            for server in [http, second] {
                let refused = try await server.send(.GET, "/v1/admin/whoami", headers: Self.admin(stack))
                #expect(refused.status == 429 && refused.headers["retry-after"] == "1", "\(refused.text)")
            }
            stack.clock.advance(by: 1)
            #expect(try await second.send(.GET, "/v1/admin/whoami", headers: Self.admin(stack)).status == 200)
            try await stopSecond()
        }
    }
}

/// `GET /v1/admin/apps/{app}/storekit-config` (and `storekeeper storekit-config`): the live
/// catalog, edits included, as the file Xcode reads.
@Suite("StoreKit configuration export")
struct StoreKitConfigRouteTests {
    @Test("the file lists every product for sale with its price, an edited product as edited; a read-only token may export it")
    func export() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let admin = AdminTokenRouteTests.admin(stack)
            let product = #"{"productId":"com.example.extra","type":"consumable","status":"ready_for_sale","priceMicros":1490000,"currency":"USD"}"#
            let edited = try await http.send(.PUT, "/v1/admin/apps/demo/products/com.example.extra", headers: admin, body: Data(product.utf8))
            #expect(edited.status == 200, "\(edited.text)")
            let reader = try await AdminTokenRouteTests.token(http, stack, name: "xcode", role: "read_only", apps: ["demo"])
            let reply = try await http.send(.GET, "/v1/admin/apps/demo/storekit-config", headers: AdminTokenRouteTests.bearer(reader.secret))
            #expect(reply.status == 200 && reply.headers["content-disposition"] == #"attachment; filename="Products.storekit""#)
            let file = try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])
            var written: [String: String] = [:]
            for item in (file["products"] as? [[String: Any]] ?? []) + (file["nonRenewingSubscriptions"] as? [[String: Any]] ?? []) {
                written[item["productID"] as? String ?? ""] = item["displayPrice"] as? String
            }
            for group in file["subscriptionGroups"] as? [[String: Any]] ?? [] {
                for item in group["subscriptions"] as? [[String: Any]] ?? [] {
                    written[item["productID"] as? String ?? ""] = item["displayPrice"] as? String
                }
            }
            #expect(written["com.example.extra"] == "1.49", "\(reply.text)")
            let catalog = try await http.send(.GET, "/v1/admin/apps/demo/products", headers: admin)
            let selling = ((catalog.json["products"] as? [[String: Any]]) ?? []).filter {
                $0["status"] as? String == "ready_for_sale" && ["consumable", "non_consumable", "non_renewing"].contains($0["type"] as? String)
            }
            #expect(!selling.isEmpty)
            for product in selling {
                let id = product["productId"] as? String ?? ""
                #expect(written[id] != nil, "\(id) is for sale and missing from the file")
            }
        }
    }
}
