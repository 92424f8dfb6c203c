import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

@testable import StorageSQLite

/// Ids as a client sends them in a path: everything but unreserved characters escaped.
func pathEncoded(_ id: String) -> String {
    id.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"))!
}

@Suite("hardening: ids in paths, strict queries, methods, media types, header limits")
struct InputHardeningTests {
    @Test("ids that need encoding reach every route decoded: subscribers, verifications, refresh, products")
    func encodedIds() async throws {
        try await withStack(configure: { $0.apps[0].serverAPI = .generated() }) { stack in
            let users = ["frank smith", "josé", "a/b", "100%", "x+y"]
            var verificationIds: [String] = []
            for user in users {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
                let reply = try await stack.api.postReceipt(appUserId: user, receipt: purchase.receipt, wait: TestWait.seconds)
                #expect(reply.json["state"] as? String == "verified", "\(user): \(reply.text)")
                verificationIds.append(try #require(reply.json["id"] as? String))
            }
            let app = ["Authorization": "Bearer \(stack.api.apiKey)"]
            for user in users {
                let reply = try await stack.api.http.send(.GET, "/v1/subscribers/\(pathEncoded(user))", headers: app)
                #expect(reply.status == 200, "\(user): \(reply.text)")
                #expect(reply.json["appUserId"] as? String == user, "\(user): \(reply.text)")
                #expect(reply.text.contains("com.example.removeads"), "\(user) owns the product: \(reply.text)")
                let refresh = try await stack.api.adminPost("/v1/admin/apps/demo/users/\(pathEncoded(user))/refresh?wait=0")
                #expect([200, 202].contains(refresh.status), "refresh of \(user): \(refresh.status) \(refresh.text)")
            }
            for id in verificationIds {
                let reply = try await stack.api.http.send(
                    .GET, "/v1/verifications/\(pathEncoded(id).replacingOccurrences(of: "-", with: "%2D"))", headers: app)
                #expect(reply.status == 200 && reply.json["id"] as? String == id, "\(reply.text)")
            }
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            // App ids and verification ids on admin routes are decoded the same way.
            let encodedApp = try await stack.api.adminGet("/v1/admin/apps/dem%6F/products")
            #expect(encodedApp.status == 200 && encodedApp.text.contains("com.example.removeads"), "\(encodedApp.text)")
            let retried = try await stack.api.adminPost(
                "/v1/admin/verifications/\(pathEncoded(verificationIds[0]).replacingOccurrences(of: "-", with: "%2D"))/retry")
            #expect([202, 409].contains(retried.status), "retry by an encoded id: \(retried.status) \(retried.text)")
            let put = try await stack.api.http.send(
                .PUT, "/v1/admin/apps/demo/products/test%20pct", headers: admin,
                body: Data(#"{"productId":"ignored","type":"non_consumable","status":"ready_for_sale"}"#.utf8))
            #expect(put.status == 200 && put.json["productId"] as? String == "test pct", "\(put.text)")
            let listed = try await stack.api.adminGet("/v1/admin/apps/demo/products")
            #expect(listed.text.contains("\"test pct\"") && !listed.text.contains("test%20pct"), "\(listed.text)")
            let deleted = try await stack.api.http.send(.DELETE, "/v1/admin/apps/demo/products/test%20pct", headers: admin)
            #expect(deleted.status == 204)
            // HTTP client libraries re-encode a malformed escape, so this one goes over a plain socket.
            let serverURL = try #require(stack.serverURL)
            let port = try #require(Int(serverURL.split(separator: ":").last ?? ""))
            for raw in ["bad%ZZid", "bad%C3%28id", "bad%"] {
                let connection = try RawConnection(port: port)
                connection.send(
                    "GET /v1/subscribers/\(raw) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(stack.api.apiKey)\r\nConnection: close\r\n\r\n")
                let answer = connection.readToEnd(within: 60)
                #expect(answer.hasPrefix("HTTP/1.1 400") && answer.contains("invalid_request"), "\(raw): \(answer)")
            }
            let control = try await stack.api.http.send(.GET, "/v1/subscribers/a%00b", headers: app)
            #expect(control.status == 400 && control.errorCode == "invalid_app_user_id", "\(control.text)")
        }
    }

    @Test("query parameters: a malformed value is a 400 naming the parameter, never a silent default")
    func strictQueries() async throws {
        try await withStack(configure: { $0.apps[0].serverAPI = .generated() }) { stack in
            let cases: [(String, String)] = [
                ("/v1/admin/verifications?limit=1001", "limit"), ("/v1/admin/verifications?limit=-5", "limit"),
                ("/v1/admin/verifications?limit=abc", "limit"), ("/v1/admin/verifications?limit=0", "limit"),
                ("/v1/admin/verifications?flagged=yes", "flagged"), ("/v1/admin/verifications?state=done", "state"),
                ("/v1/admin/apps/demo/ledger?from=yesterday", "from"), ("/v1/admin/apps/demo/ledger?format=xml", "format"),
                ("/v1/admin/apps/demo/ledger?environment=staging", "environment"), ("/v1/admin/apps/demo/ledger?from=2026-02-30", "from"),
                ("/v1/admin/apps/demo/ledger?to=2026-01-01T00:00:00", "to"), ("/v1/admin/apps/demo/ledger?to=2026-01-06T15:01:48.7%2B24:00", "to"),
                ("/v1/admin/verifications?state=", "state"), ("/v1/admin/verifications?state=pending,,verified", "state"),
            ]
            for (path, parameter) in cases {
                let reply = try await stack.api.adminGet(path)
                #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(path): \(reply.text)")
                #expect(reply.text.contains(parameter), "\(path) names \(parameter): \(reply.text)")
            }
            for lookback in ["0x10", "inf", "0", "1e400"] {
                let reply = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill?lookbackSeconds=\(lookback)")
                #expect(reply.status == 400 && reply.text.contains("lookbackSeconds"), "lookbackSeconds=\(lookback): \(reply.text)")
            }
            #expect(try await stack.api.adminGet("/v1/admin/verifications?limit=1000").status == 200)
            for range in ["from=2026-01-01&to=2026-12-31T00:00:00Z", "to=5984-01-06T15:01:48.70150%2B15:03", "from=2026-01-01T23:30:00-23:59"] {
                let reply = try await stack.api.adminGet("/v1/admin/apps/demo/ledger?\(range)")
                #expect(reply.status == 200, "\(range): \(reply.text)")
            }
            for wait in ["abc", "-1", "nan"] {
                let refresh = try await stack.api.adminPost("/v1/admin/apps/demo/users/alice/refresh?wait=\(wait)")
                #expect(refresh.status == 400 && refresh.text.contains("wait"), "refresh wait=\(wait): \(refresh.text)")
                let receipt = try await stack.api.http.send(
                    .POST, "/v1/receipts?wait=\(wait)", headers: ["Authorization": "Bearer \(stack.api.apiKey)"],
                    body: Data(#"{"appUserId":"a","receipt":"aGVsbG8="}"#.utf8))
                #expect(receipt.status == 400 && receipt.text.contains("wait"), "receipts wait=\(wait): \(receipt.text)")
            }
        }
    }

    @Test("a known path with another method is a 405 with Allow; a body labelled as not JSON is a 415")
    func methodsAndMediaTypes() async throws {
        try await withStack { stack in
            let app = ["Authorization": "Bearer \(stack.api.apiKey)"]
            let wrongMethod = try await stack.api.http.send(.DELETE, "/v1/products", headers: app)
            #expect(wrongMethod.status == 405 && wrongMethod.errorCode == "method_not_allowed", "\(wrongMethod.text)")
            #expect(wrongMethod.headers["allow"] == "GET, HEAD")
            let put = try await stack.api.http.send(.PUT, "/v1/receipts", headers: app, body: Data("{}".utf8))
            #expect(put.status == 405 && put.headers["allow"] == "POST")
            let product = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/products/some-id", headers: app)
            #expect(product.status == 405 && product.headers["allow"] == "DELETE, PUT", "\(product.headers)")
            let query = try await stack.api.http.send(HTTPMethod(rawValue: "QUERY"), "/v1/products", headers: app)
            #expect(query.status == 405 && query.headers["allow"] == "GET, HEAD", "any method, not only the common ones")
            #expect(try await stack.api.http.send(.HEAD, "/healthz").status == 200, "HEAD wherever GET")
            #expect(try await stack.api.http.send(.GET, "/v1/nowhere", headers: app).status == 404)

            let body = Data(#"{"appUserId":"a","receipt":"aGVsbG8="}"#.utf8)
            for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
                let reply = try await stack.api.http.send(.POST, "/v1/receipts", headers: app.merging(["Content-Type": type]) { $1 }, body: body)
                #expect(reply.status == 415 && reply.errorCode == "unsupported_media_type", "\(type): \(reply.text)")
            }
            for type in ["application/json; charset=utf-8", "application/vnd.storekeeper+json", "Application/JSON"] {
                let reply = try await stack.api.http.send(.POST, "/v1/receipts", headers: app.merging(["Content-Type": type]) { $1 }, body: body)
                #expect(reply.status == 400 && reply.errorCode == "invalid_receipt", "\(type) is JSON: \(reply.text)")
            }
        }
    }

    @Test("request headers or a request line over the limit get the JSON error, and the server goes on")
    func oversizedHeaders() async throws {
        try await withStack { stack in
            let big = String(repeating: "a", count: 100 * 1024)
            let header = try await stack.api.http.send(.GET, "/healthz", headers: ["X-Big": big])
            #expect(header.status == 431 && header.errorCode == "headers_too_large", "\(header.status) \(header.text.prefix(200))")
            let url = try await stack.api.http.send(.GET, "/v1/subscribers/\(big)", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect([414, 431].contains(url.status) && url.errorCode != nil, "\(url.status) \(url.text.prefix(200))")
            let many = Dictionary(uniqueKeysWithValues: (0..<150).map { ("X-Field-\($0)", "v") })
            let fields = try await stack.api.http.send(.GET, "/healthz", headers: many)
            #expect(fields.status == 431 && fields.errorCode == "headers_too_large")
            #expect(try await stack.api.http.send(.GET, "/healthz").status == 200)
        }
    }
}

@Suite("hardening: pure parts of the fault handling")
struct FaultRuleTests {
    @Test("backoff doubles up to its cap and reports only the changes of state")
    func backoff() {
        var backoff = FailureBackoff(base: 0.1, cap: 1)
        let first = backoff.failed()
        #expect(first.startsOutage && first.delay == 0.1)
        let second = backoff.failed()
        #expect(!second.startsOutage && second.delay == 0.2)
        for _ in 0..<10 { _ = backoff.failed() }
        #expect(backoff.failed().delay == 1)
        #expect(backoff.succeeded() == 13)
        #expect(backoff.succeeded() == 0)
        #expect(backoff.failed().startsOutage)
    }

    @Test("a lease owner is gone only when this machine can prove it")
    func processIdentity() throws {
        let me = ProcessIdentity.current
        #expect(me.startTicks != 0)
        let owner = me.owner(tag: "abc")
        #expect(ProcessIdentity(owner: owner) == me)
        #expect(ProcessIdentity(owner: "runner-1234abcd") == nil, "older owners prove nothing")
        #expect(!me.isCertainlyGone(seenFrom: me))
        var earlierMe = me
        earlierMe.startTicks -= 1
        #expect(earlierMe.isCertainlyGone(seenFrom: me), "same pid, other start: an earlier incarnation")
        var elsewhere = me
        elsewhere.host = "another-host"
        elsewhere.pid = 999_999
        #expect(!elsewhere.isCertainlyGone(seenFrom: me))
        let finished = try SpawnedProcess(executable: "/bin/true", arguments: [])
        finished.waitUntilExit()
        let dead = ProcessIdentity(host: me.host, pid: finished.pid, startTicks: 12345)
        #expect(dead.isCertainlyGone(seenFrom: me))
    }

    @Test("the connection cap leaves room for files the server needs and honours a configured value")
    func connectionLimits() {
        let derived = ConnectionLimits.derive(fileLimit: 1024, workers: 256, configured: nil)
        #expect(derived.maxConnections + derived.reserved < 1024)
        #expect(derived.maxConnections >= 16)
        #expect(ConnectionLimits.derive(fileLimit: 100, workers: 256, configured: nil).maxConnections == 16)
        #expect(ConnectionLimits.derive(fileLimit: 1024, workers: 1, configured: 7).maxConnections == 7)
    }
}
