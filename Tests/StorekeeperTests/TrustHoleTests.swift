import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Attacks with what ships in an app (the publishable client key, a user token for one's own
/// account) and, for webhooks, the admin key: one test per hole of docs/SECURITY.md, each over
/// real HTTP against a `serve`-equivalent stack, on both databases where storage decides.
@Suite("trust holes")
struct TrustHoleTests {
    static let clientKey = "pk_test_trust_holes_0001"
    static let secret = "user-token-secret-of-the-apps-backend-0123"

    /// PostgreSQL too whenever the suite has a server (always in CI).
    static var backends: [String] { WebhookTests.backends }

    static func clientAccess(keyRate: Double = 1_000) -> ClientAccess {
        ClientAccess(
            key: clientKey, userTokens: UserTokenPolicy(hs256Secret: secret), keyRatePerSecond: keyRate, userRatePerSecond: 2,
            sourceRatePerSecond: 5)
    }

    func withClientStack(
        backend: String = "sqlite", keyRate: Double = 1_000, configure: (inout StorekeeperConfiguration) -> Void = { _ in },
        _ body: (LocalStack) async throws -> Void
    ) async throws {
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "trust") : nil
        try await withStack(configure: { configuration in
            configuration.apps[0].client = Self.clientAccess(keyRate: keyRate)
            if let database { configuration.databasePath = database }
            configure(&configuration)
        }) { stack in try await body(stack) }
    }

    func headers(_ stack: LocalStack, user: String?, token: String? = nil) throws -> [String: String] {
        var headers = ["Authorization": "Bearer \(Self.clientKey)"]
        if let user { headers["Storekeeper-User-Token"] = try UserTokens.hs256(user: user, secret: Self.secret, now: stack.clock.now()) }
        if let token { headers["Storekeeper-User-Token"] = token }
        return headers
    }

    struct Post: Encodable {
        var appUserId: String
        var signedTransaction: String
        var appAccountToken: String?
    }

    @Test("another user's signed transaction posted without the body token: 409 and nothing stored", arguments: backends)
    func anotherUsersTransactionWithoutBodyToken(backend: String) async throws {
        try await withClientStack(backend: backend) { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bobs = try await stack.simulator.purchase(
                device: device, productId: "com.example.removeads", appAccountToken: AppAccountToken.derive(appUserId: "bob"))

            // Alice, with her own valid token, posts bob's purchase and leaves the token out.
            let stolen = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: try headers(stack, user: "alice"),
                json: Post(appUserId: "alice", signedTransaction: bobs.signedTransaction))
            #expect(stolen.status == 409 && stolen.errorCode == "app_account_token_mismatch", "\(stolen.text)")
            // Sending bob's token along does not help either.
            let vouched = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: try headers(stack, user: "alice"),
                json: Post(
                    appUserId: "alice", signedTransaction: bobs.signedTransaction, appAccountToken: AppAccountToken.derive(appUserId: "bob")))
            #expect(vouched.status == 409 && vouched.errorCode == "app_account_token_mismatch", "\(vouched.text)")
            // The backend naming alice without a token is held to the same signed fact.
            let backend = try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bobs.signedTransaction)
            #expect(backend.status == 409 && backend.errorCode == "app_account_token_mismatch", "\(backend.text)")

            // Nothing was stored: alice owns nothing, and bob's own post is granted to him.
            #expect(try await stack.store.transactions(appId: "demo", appUserId: "alice").isEmpty)
            let own = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: try headers(stack, user: "bob"),
                json: Post(appUserId: "bob", signedTransaction: bobs.signedTransaction))
            #expect(own.status == 200 && own.json["state"] as? String == "verified", "\(own.text)")
            let grant = own.json["grant"] as? [String: Any]
            #expect((grant?["granted"] as? [String]) == [bobs.transactionId], "\(own.text)")
            #expect(try await stack.api.subscriber("bob").activeEntitlements.contains("com.example.removeads"))
            #expect(try await stack.api.subscriber("alice").activeEntitlements.isEmpty)

            // The backend may vouch for a token it issued itself (not the derived one).
            let issued = UUID().uuidString.lowercased()
            let own2 = try await stack.simulator.purchase(device: device, productId: "com.example.season.pass", appAccountToken: issued)
            let vouchedByBackend = try await stack.api.postSignedTransaction(
                appUserId: "carol", signedTransaction: own2.signedTransaction, appAccountToken: issued.uppercased(), wait: TestWait.seconds)
            #expect(vouchedByBackend.status == 200 && vouchedByBackend.json["state"] as? String == "verified", "\(vouchedByBackend.text)")
        }
    }

    @Test("a garbage-token flood from one client gives a concurrent legitimate user no 429; refusals are counted by route and code")
    func garbageTokenFloodDoesNotLockOutUsers() async throws {
        // A client-key budget of one call a second (ten in the bucket): before the fix the
        // flood emptied it for everyone.
        try await withClientStack(keyRate: 1) { stack in
            // The limiter reads the stack's clock: frozen, no bucket refills between calls, so the
            // count of calls decides, not how fast a busy machine makes them.
            stack.clock.freeze()
            let http = stack.api.http
            let garbage = try headers(stack, user: nil, token: "x.y.z")
            let alice = try headers(stack, user: "alice")
            var garbageStatuses = Set<Int>()
            var aliceStatuses: [Int] = []
            for round in 0..<120 {
                garbageStatuses.insert(try await http.send(.GET, "/v1/subscribers/alice", headers: garbage).status)
                if round % 15 == 0 { aliceStatuses.append(try await http.send(.GET, "/v1/subscribers/alice", headers: alice).status) }
            }
            #expect(aliceStatuses.count == 8 && aliceStatuses.allSatisfy { $0 == 200 }, "\(aliceStatuses)")
            #expect(garbageStatuses.isSubset(of: [401, 429]) && garbageStatuses.contains(429), "\(garbageStatuses)")

            let metrics = try await http.send(.GET, "/metrics", headers: ["Authorization": "Bearer \(stack.api.adminKey)"])
            let text = metrics.text
            #expect(
                text.contains("storekeeper_http_refusals_total{code=\"invalid_user_token\",route=\"/v1/subscribers/{appUserId}\",status=\"401\"}"),
                "\(text.split(separator: "\n").filter { $0.contains("refusals") })")
            #expect(text.contains("storekeeper_http_refusals_total{code=\"rate_limited\",route=\"/v1/subscribers/{appUserId}\",status=\"429\"}"))
        }
    }

    @Test(
        "behind a trusted proxy: a bad-token flood leaves anonymous users at its address their own budget and other clients theirs; a client's own X-Forwarded-For is not read"
    )
    func floodBehindABalancer() async throws {
        try await withClientStack(configure: {
            $0.apps[0].client?.allowAnonymous = true
            $0.trustedProxies = ["127.0.0.0/8"].compactMap { IPNetwork($0) }
        }) { stack in
            // Frozen: no bucket refills, so the count of calls decides (a budget of 5/s, 50 in the bucket).
            stack.clock.freeze()
            let http = stack.api.http
            let path = "/v1/subscribers/" + AnonymousId.new()
            func call(token: String?, from addresses: String) async throws -> Int {
                var headers = try self.headers(stack, user: nil, token: token)
                headers["X-Forwarded-For"] = addresses
                return try await http.send(.GET, path, headers: headers).status
            }
            var flood = Set<Int>()
            for _ in 0..<60 { flood.insert(try await call(token: "x.y.z", from: "203.0.113.7")) }
            #expect(flood == [401, 429], "the flood meets its address's budget for failed calls: \(flood)")
            var anonymous: [Int] = []
            for _ in 0..<8 { anonymous.append(try await call(token: nil, from: "203.0.113.7")) }
            #expect(anonymous.allSatisfy { $0 == 200 }, "anonymous calls at the flooding address keep their own budget: \(anonymous)")
            #expect(try await call(token: "x.y.z", from: "198.51.100.9") == 401, "another client behind the proxy is not limited")
            // What the client wrote to the left of the proxy's own entry is never read.
            #expect(try await call(token: "x.y.z", from: "198.51.100.9, 203.0.113.7") == 429)
        }
        // No trusted proxy: the header is anyone's to send, so the connection's address counts.
        try await withClientStack { stack in
            stack.clock.freeze()
            var statuses = Set<Int>()
            for i in 0..<60 {
                var headers = try self.headers(stack, user: nil, token: "x.y.z")
                headers["X-Forwarded-For"] = "198.51.100.\(i)"
                statuses.insert(try await stack.api.http.send(.GET, "/v1/subscribers/alice", headers: headers).status)
            }
            #expect(statuses == [401, 429], "a new X-Forwarded-For on each call changes nothing: \(statuses)")
        }
    }

    @Test(
        "guessing the admin key: ten wrong keys from an address, then 429 before any key is compared (the right one too) until its bucket refills; an app's own key is no guess"
    )
    func adminKeyGuessing() async throws {
        try await withClientStack { stack in
            // Frozen: the bucket refills only when the test moves the clock.
            stack.clock.freeze()
            let http = stack.api.http
            func admin(_ key: String) async throws -> HTTPJSONClient.Reply {
                try await http.send(.GET, "/v1/admin/apps/demo/audit", headers: ["Authorization": "Bearer \(key)"])
            }
            for _ in 0..<20 { #expect(try await admin(stack.api.apiKey).status == 401, "an app's own key: refused, not counted") }
            var statuses: [Int] = []
            for guess in 0..<12 { statuses.append(try await admin("guess-\(guess)").status) }
            #expect(statuses == Array(repeating: 401, count: 10) + [429, 429], "\(statuses)")
            let right = try await admin(stack.api.adminKey)
            #expect(right.status == 429 && right.errorCode == "rate_limited", "no key is compared while guessing is refused: \(right.text)")
            #expect(right.headers["retry-after"] == "1", "\(right.headers)")
            stack.clock.advance(by: 1)
            #expect(try await admin(stack.api.adminKey).status == 200)
            let metrics = try await http.send(.GET, "/metrics", headers: ["Authorization": "Bearer \(stack.api.adminKey)"]).text
            #expect(metrics.contains("storekeeper_http_refusals_total{code=\"unauthorized\",route=\"/v1/admin/apps/{app}/audit\",status=\"401\"} 30"))
        }
    }

    @Test("NFC and NFD spellings of one name are two users, in authorization and in storage", arguments: backends)
    func nfcAndNfdAreTwoUsers(backend: String) async throws {
        try await withClientStack(backend: backend) { stack in
            let http = stack.api.http
            let nfc = "caf\u{E9}"
            let nfd = "cafe\u{301}"
            #expect(nfc == nfd, "Swift calls them equal; the server must not")
            let nfcPath = "/v1/subscribers/" + (nfc.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let nfdPath = "/v1/subscribers/" + (nfd.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let asNFC = try headers(stack, user: nfc)
            #expect(try await http.send(.GET, nfcPath, headers: asNFC).status == 200)
            let other = try await http.send(.GET, nfdPath, headers: asNFC)
            #expect(other.status == 403 && other.errorCode == "other_user", "\(other.text)")

            // Storage: a purchase for the NFC spelling is not the NFD one's.
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(
                device: device, productId: "com.example.removeads", appAccountToken: AppAccountToken.derive(appUserId: nfc))
            let posted = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: asNFC, json: Post(appUserId: nfd, signedTransaction: bought.signedTransaction))
            #expect(posted.status == 403 && posted.errorCode == "other_user", "\(posted.text)")
            let mine = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: asNFC, json: Post(appUserId: nfc, signedTransaction: bought.signedTransaction))
            #expect(mine.status == 200 && mine.json["state"] as? String == "verified", "\(mine.text)")
            #expect(try await stack.store.transactions(appId: "demo", appUserId: nfc).count == 1)
            #expect(try await stack.store.transactions(appId: "demo", appUserId: nfd).isEmpty)
            let nfdView = try await http.send(.GET, nfdPath, headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect(nfdView.status == 200 && (nfdView.json["activeEntitlements"] as? [String])?.isEmpty == true, "\(nfdView.text)")
        }
    }

    @Test("smaller holes: another user's verification names nobody; NUL in a path id; aud of another app")
    func smallerHoles() async throws {
        try await withClientStack { stack in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(
                device: device, productId: "com.example.coins100", appAccountToken: AppAccountToken.derive(appUserId: "bob"))
            let bob = try headers(stack, user: "bob")
            let posted = try await http.send(
                .POST, "/v1/transactions?\(TestWait.query)", headers: bob, json: Post(appUserId: "bob", signedTransaction: bought.signedTransaction))
            let id = try #require(posted.json["id"] as? String, "\(posted.text)")

            let peek = try await http.send(.GET, "/v1/verifications/\(id)", headers: try headers(stack, user: "alice"))
            #expect(peek.status == 403 && peek.errorCode == "other_user" && !peek.text.contains("bob"), "\(peek.text)")

            for (path, code) in [
                ("/v1/verifications/\(id)%00junk", "invalid_request"), ("/v1/subscribers/bob%00", "invalid_app_user_id"),
                ("/v1/subscribers/bob%0a", "invalid_app_user_id"),
            ] {
                let reply = try await http.send(.GET, path, headers: bob)
                #expect(reply.status == 400 && reply.errorCode == code, "\(path): \(reply.text)")
            }

            let now = Int(stack.clock.now().timeIntervalSince1970)
            for (name, claims, status) in [
                ("another app's audience", ["sub": "bob", "iat": now, "exp": now + 300, "aud": "another-app"] as [String: Any], 401),
                ("this app's audience", ["sub": "bob", "iat": now, "exp": now + 300, "aud": "demo"], 200),
                ("an audience list with this app", ["sub": "bob", "iat": now, "exp": now + 300, "aud": ["x", "demo"]], 200),
            ] {
                let token = try UserTokens.hs256(claims, secret: Self.secret)
                let reply = try await http.send(.GET, "/v1/subscribers/bob", headers: try headers(stack, user: nil, token: token))
                #expect(reply.status == status, "\(name): \(reply.text)")
            }
        }
    }

    func admin(_ stack: LocalStack) -> [String: String] { ["Authorization": "Bearer \(stack.api.adminKey)"] }

    /// A receiver for the test, stopped whatever happens.
    func withReceiver(_ body: (WebhookReceiver) async throws -> Void) async throws {
        let receiver = try await WebhookReceiver.start()
        do {
            try await body(receiver)
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    @Test(
        "webhook URLs aimed inside are refused at registration, a public IPv6 literal is accepted, a name resolving to loopback is refused at delivery"
    )
    func webhookDestinations() async throws {
        try await withReceiver { receiver in
            try await withStack(configure: { configuration in
                WebhookTests.configure(&configuration)
                configuration.webhooks.allowPrivateDestinations = false
            }) { stack in
                let http = stack.api.http
                let port = URL(string: receiver.url)?.port ?? 0
                for url in [
                    "http://169.254.169.254/latest/meta-data", "http://2852039166/latest", "http://0x7f000001:5432/", "http://0177.0.0.1/",
                    "http://127.1:\(port)/hook", "http://localhost:5432/", "http://10.0.0.1/", "http://0.0.0.0:22/",
                    "http://metadata.google.internal/computeMetadata/v1", "http://127.0.0.1:\(port)/hook", "http://192.168.1.1/",
                    "http://172.16.0.1/", "http://100.64.0.1/", "http://224.0.0.1/", "http://[::1]:\(port)/hook", "http://[fd00::1]/",
                    "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/", "http://[::]/", "http://[ff02::1]/", "http://printer.local/",
                ] {
                    let reply = try await http.send(
                        .POST, "/v1/admin/apps/demo/webhooks", headers: admin(stack), body: Data(#"{"url":"\#(url)"}"#.utf8))
                    #expect(reply.status == 400 && reply.errorCode == "webhook_destination_refused", "\(url): \(reply.text)")
                }
                let public6 = try await http.send(
                    .POST, "/v1/admin/apps/demo/webhooks", headers: admin(stack),
                    body: Data(#"{"url":"https://[2606:4700:4700::1111]/hook","state":"paused"}"#.utf8))
                #expect(public6.status == 201, "\(public6.text)")
                let endpoint = public6.json["endpoint"] as? [String: Any]
                let id = try #require(endpoint?["id"] as? String)
                let moved = try await http.send(
                    .PATCH, "/v1/admin/apps/demo/webhooks/\(id)", headers: admin(stack), body: Data(#"{"url":"http://10.1.2.3/"}"#.utf8))
                #expect(moved.status == 400 && moved.errorCode == "webhook_destination_refused", "\(moved.text)")
                #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/webhooks/\(id)", headers: admin(stack)).status == 204)

                // A name registered while it pointed outside and resolving to loopback now (as
                // DNS can be changed after registration): refused at delivery, recorded, never sent.
                let now = stack.clock.now()
                let secret = "whsec_" + Data((0..<24).map { UInt8($0) }).base64EncodedString()
                try await stack.store.createEndpoint(
                    WebhookEndpoint(
                        id: "whep_rebound", appId: "demo", url: "http://localhost:\(port)/hook", secrets: [.init(value: secret, createdAt: now)],
                        createdAt: now, updatedAt: now))
                let test = try await http.send(.POST, "/v1/admin/apps/demo/webhooks/whep_rebound/test", headers: admin(stack))
                #expect(test.status == 202, "\(test.text)")
                var attempts: [[String: Any]] = []
                #expect(
                    try await stack.whenSettled {
                        let reply = try await http.send(.GET, "/v1/admin/apps/demo/webhooks/whep_rebound/deliveries", headers: admin(stack))
                        let deliveries = reply.json["deliveries"] as? [[String: Any]] ?? []
                        attempts = deliveries.flatMap { $0["attempts"] as? [[String: Any]] ?? [] }
                        return !attempts.isEmpty
                    })
                #expect(attempts.allSatisfy { $0["error"] as? String == "destination_refused" }, "\(attempts)")
                #expect(receiver.received.isEmpty, "nothing reached the loopback receiver")
            }
        }
    }

    /// A stack with short webhook retries on `backend`, and an endpoint for a receiver of its own.
    func withWebhookStack(
        backend: String, prefix: String, _ body: (LocalStack, WebhookReceiver, _ endpointId: String) async throws -> Void
    ) async throws {
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: prefix) : nil
        try await withReceiver { receiver in
            try await withStack(configure: { configuration in
                WebhookTests.configure(&configuration)
                if let database { configuration.databasePath = database }
            }) { stack in
                let created = try await stack.api.http.send(
                    .POST, "/v1/admin/apps/demo/webhooks", headers: admin(stack), body: Data(#"{"url":"\#(receiver.url)"}"#.utf8))
                let endpointId = try #require((created.json["endpoint"] as? [String: Any])?["id"] as? String, "\(created.text)")
                try await body(stack, receiver, endpointId)
            }
        }
    }

    /// The events one subscriber's deliveries brought to the receiver, by sequence, in arrival order.
    func sequences(_ receiver: WebhookReceiver, of user: String) -> [Int] {
        receiver.received.filter { $0.json["appUserId"] as? String == user }.compactMap { $0.json["sequence"] as? Int }
    }

    @Test("a dead letter holds its subscriber's later events: resume then replay, replay then resume, and skip", arguments: backends)
    func deadLetterOrder(backend: String) async throws {
        try await withWebhookStack(backend: backend, prefix: "deadorder") { stack, receiver, endpointId in
            let http = stack.api.http
            let base = "/v1/admin/apps/demo/webhooks/\(endpointId)"
            // Time moves at the test's word: a subscriber's next event follows the earlier one
            // 0.1 s after it, so each step lets every due delivery run, then moves past that.
            stack.clock.freeze()
            func delivered(_ done: () -> Bool) async throws -> Bool {
                for _ in 0..<20 {
                    try await stack.settle()
                    if done() { return true }
                    stack.clock.advance(by: 0.2)
                }
                return done()
            }

            /// The user's first event dies (410 pauses the endpoint; the entitlement it grants,
            /// event 2, waits behind it), then a third is recorded (each user buys on a device of
            /// their own: a receipt carries the device's purchases).
            func deadThenLater(_ user: String) async throws -> String {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                receiver.behave(.gone)
                let first = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
                #expect(try await stack.api.postReceipt(appUserId: user, receipt: first.receipt, wait: TestWait.seconds).status == 200)
                var deadId = ""
                #expect(
                    try await stack.whenSettled {
                        let reply = try await http.send(.GET, "\(base)/deliveries?state=dead", headers: admin(stack))
                        let dead = (reply.json["deliveries"] as? [[String: Any]] ?? []).compactMap { $0["delivery"] as? [String: Any] }
                            .filter { ($0["appUserId"] as? String) == user }
                        deadId = dead.first?["id"] as? String ?? ""
                        return !deadId.isEmpty
                    })
                receiver.behave(.accept)
                let second = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                #expect(try await stack.api.postReceipt(appUserId: user, receipt: second.receipt, wait: TestWait.seconds).status == 200)
                return deadId
            }
            func resume() async throws {
                let reply = try await http.send(.PATCH, base, headers: admin(stack), body: Data(#"{"state":"active"}"#.utf8))
                #expect(reply.status == 200, "\(reply.text)")
            }

            // Resume, then replay.
            let frankDead = try await deadThenLater("frank")
            try await resume()
            let replayed = try await http.send(.POST, "\(base)/deliveries/\(frankDead)/replay", headers: admin(stack))
            #expect(replayed.status == 202, "\(replayed.text)")
            #expect(try await delivered { sequences(receiver, of: "frank").count >= 3 })
            #expect(sequences(receiver, of: "frank") == [1, 2, 3])

            // Replay, then resume.
            let ginaDead = try await deadThenLater("gina")
            #expect(try await http.send(.POST, "\(base)/deliveries/\(ginaDead)/replay", headers: admin(stack)).status == 202)
            try await resume()
            #expect(try await delivered { sequences(receiver, of: "gina").count >= 3 })
            #expect(sequences(receiver, of: "gina") == [1, 2, 3])

            // Skipped: the later event goes on; the dead one stays dead, never sent.
            let hankDead = try await deadThenLater("hank")
            try await resume()
            let skipped = try await http.send(.POST, "\(base)/deliveries/\(hankDead)/skip", headers: admin(stack))
            #expect(skipped.status == 200, "\(skipped.text)")
            #expect(try await delivered { sequences(receiver, of: "hank").count >= 2 })
            #expect(sequences(receiver, of: "hank") == [2, 3])
            let unknown = try await http.send(.POST, "\(base)/deliveries/\(frankDead)/skip", headers: admin(stack))
            #expect(unknown.status == 404, "a delivered one is not dead: \(unknown.text)")
        }
    }

    /// `2026-…T…:44.472Z` from Apple's milliseconds, written here without the server's code.
    static func iso(milliseconds ms: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        let whole = formatter.string(from: Date(timeIntervalSince1970: Double(ms / 1000)))
        let fraction = String(ms % 1000)
        return whole.dropLast() + "." + String(repeating: "0", count: 3 - fraction.count) + fraction + "Z"
    }

    @Test(
        "Apple's millisecond is one value in the ledger, the subscriber answer, the feed and the webhook; feed item and webhook body are byte-identical",
        arguments: backends)
    func oneInstantOneValue(backend: String) async throws {
        try await withWebhookStack(backend: backend, prefix: "instant") { stack, receiver, _ in
            let http = stack.api.http
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            var expected: [String: String] = [:]  // transaction id → ISO instant
            for _ in 0..<6 {
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                let payload = try jwsPayload(bought.signedTransaction)
                let ms = try #require((payload["purchaseDate"] as? NSNumber)?.int64Value)
                expected[bought.transactionId] = Self.iso(milliseconds: ms)
                #expect(try await stack.api.postReceipt(appUserId: "ivy", receipt: bought.receipt, wait: TestWait.seconds).status == 200)
            }
            let ledger = try await http.send(.GET, "/v1/admin/apps/demo/ledger?environment=sandbox", headers: admin(stack))
            let rows = (ledger.json["entries"] as? [[String: Any]]) ?? []
            let subscriber = try await http.send(.GET, "/v1/subscribers/ivy", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect(try await stack.whenSettled { receiver.received.filter { $0.json["appUserId"] as? String == "ivy" }.count >= 6 })
            let feed = try await http.send(.GET, "/v1/events?limit=100", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            for (transactionId, instant) in expected {
                let row = rows.first { $0["transactionId"] as? String == transactionId }
                #expect(row?["purchaseDate"] as? String == instant, "ledger: \(String(describing: row))")
                #expect(subscriber.text.contains("\"\(instant)\""), "subscriber answer lacks \(instant)")
                let hook = try #require(receiver.received.first { $0.json["transactionId"] as? String == transactionId })
                #expect(hook.json["occurredAt"] as? String == instant, "webhook: \(hook.json)")
                #expect(feed.text.contains(String(decoding: hook.body, as: UTF8.self)), "the feed item is the webhook body, byte for byte")
            }
        }
    }
}
