import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorageSQLite
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Runs `body` against a fresh simulator + server pair on loopback, and always stops them.
func withStack<T>(
    secondsPerMonth: Double = 300, configure: (inout StorekeeperConfiguration) -> Void = { _ in },
    configureSimulator: (inout SimulatorConfiguration) -> Void = { _ in }, throughGateway: Bool = false,
    _ body: (LocalStack) async throws -> T
) async throws -> T {
    let databasePath = LocalStack.temporaryDatabasePath()
    defer { LocalStack.removeTemporaryDatabase(databasePath) }
    var configuration = LocalStack.testConfiguration(databasePath: databasePath)
    configure(&configuration)
    var simulator = LocalStack.simulatorConfiguration(for: configuration, secondsPerMonth: secondsPerMonth)
    configureSimulator(&simulator)
    let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, throughGateway: throughGateway)
    do {
        let result = try await body(stack)
        try await stack.stop()
        return result
    } catch {
        try? await stack.stop()
        throw error
    }
}

let demoBundle = DemoConfiguration.bundleId

@Suite("end to end over HTTP: simulator → server")
struct EndToEndTests {
    @Test("every product type: purchase in the simulator, post the receipt, the subscriber owns it")
    func everyProductType() async throws {
        try await withStack { stack in
            let api = stack.api
            let products = try await api.http.send(.GET, "/v1/products", headers: ["Authorization": "Bearer \(api.apiKey)"])
            let offered = ((products.json["products"] as? [[String: Any]]) ?? []).compactMap { $0["productId"] as? String }
            #expect(offered.count == 5 && !offered.contains("com.example.legacy.pack"))

            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            for product in [
                "com.example.coins100", "com.example.removeads", "com.example.pro.monthly", "com.example.season.pass", "com.example.free.tier",
            ] {
                let purchase = try await stack.simulator.purchase(device: device, productId: product)
                let reply = try await api.postReceipt(appUserId: "alice", receipt: purchase.receipt, wait: TestWait.seconds)
                #expect(reply.status == 200, "\(product): \(reply.text)")
                #expect(reply.json["state"] as? String == "verified", "\(product): \(reply.text)")
                let grant = reply.json["grant"] as? [String: Any]
                #expect((grant?["granted"] as? [String]) == [purchase.transactionId], "\(product) grants exactly its new transaction")
            }
            let alice = try await api.subscriber("alice")
            #expect(alice.creditBalance == 100)
            #expect(alice.nonConsumables.map(\.productId) == ["com.example.removeads"])
            #expect(alice.freeSubscriptions.map(\.productId) == ["com.example.free.tier"])
            let subscription = try #require(alice.subscriptions.first)
            #expect(subscription.status == .active && subscription.isActive && subscription.expiresDate! > Date())
            let season = try #require(alice.nonRenewingSubscriptions.first)
            #expect(season.isActive && season.endDate > Date().addingTimeInterval(80 * 86_400))
            #expect(
                Set(alice.activeEntitlements)
                    == ["com.example.removeads", "com.example.free.tier", "com.example.pro.monthly", "com.example.season.pass"])
            #expect(alice.history.count == 5)
            #expect(try await api.subscriber("nobody").activeEntitlements.isEmpty)
        }
    }

    @Test("sandbox receipts take the 21007 route, are recorded as sandbox and kept apart in the ledger")
    func sandboxRouting() async throws {
        try await withStack(configure: { c in
            c.apps.append(
                AppConfiguration(
                    id: "strict", bundleId: "com.example.strict", sharedSecret: "s", acceptSandbox: false,
                    apiKey: "strict-app-key-0123456789", products: [Product(productId: "gold", type: .nonConsumable)]))
        }) { stack in
            let api = stack.api
            let sandboxDevice = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
            let productionDevice = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sandbox = try await api.postReceipt(
                appUserId: "tester", receipt: try await stack.simulator.purchase(device: sandboxDevice, productId: "com.example.removeads").receipt,
                wait: TestWait.seconds)
            let production = try await api.postReceipt(
                appUserId: "payer", receipt: try await stack.simulator.purchase(device: productionDevice, productId: "com.example.removeads").receipt,
                wait: TestWait.seconds)
            #expect(sandbox.json["environment"] as? String == "sandbox")
            #expect(sandbox.json["appleStatuses"] as? [Int] == [21007, 0])
            #expect(production.json["environment"] as? String == "production")
            #expect(production.json["appleStatuses"] as? [Int] == [0])

            let sandboxLedger = try await api.adminGet("/v1/admin/apps/demo/ledger?environment=sandbox")
            let productionLedger = try await api.adminGet("/v1/admin/apps/demo/ledger?environment=production")
            let sandboxUsers = ((sandboxLedger.json["entries"] as? [[String: Any]]) ?? []).map { $0["appUserId"] as? String }
            let productionUsers = ((productionLedger.json["entries"] as? [[String: Any]]) ?? []).map { $0["appUserId"] as? String }
            #expect(sandboxUsers == ["tester"] && productionUsers == ["payer"])
            let csv = try await api.adminGet("/v1/admin/apps/demo/ledger?environment=production&format=csv")
            #expect(csv.headers["content-type"]?.hasPrefix("text/csv") == true)
            let lines = csv.text.split(separator: "\r\n")
            #expect(
                lines.count == 2 && lines[0].hasPrefix("app_id,app_user_id,product_id") && lines[1].contains(",payer,")
                    && lines[1].contains(",2990000,USD,"))

            // An app that does not accept sandbox receipts marks them invalid, without granting.
            let strict = StorekeeperClient(http: api.http, apiKey: "strict-app-key-0123456789", adminKey: api.adminKey)
            let strictDevice = try await stack.simulator.createDevice(bundleId: "com.example.strict", environment: "sandbox")
            let refused = try await strict.postReceipt(
                appUserId: "x", receipt: try await stack.simulator.purchase(device: strictDevice, productId: "gold").receipt, wait: TestWait.seconds)
            #expect(refused.json["state"] as? String == "invalid" && refused.json["reason"] as? String == "sandbox_not_accepted")
            #expect(try await strict.subscriber("x").activeEntitlements.isEmpty)
        }
    }

    @Test("replays: same receipt twice, same transaction from another user, old consumable in a newer receipt")
    func replays() async throws {
        try await withStack { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let first = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let a = try await api.postReceipt(appUserId: "alice", receipt: first.receipt, wait: TestWait.seconds)
            let b = try await api.postReceipt(appUserId: "alice", receipt: first.receipt, wait: TestWait.seconds)
            #expect(a.json["id"] as? String == b.json["id"] as? String)
            #expect(try await stack.store.jobCounts().values.reduce(0, +) == 1)

            let second = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let newer = try await api.postReceipt(appUserId: "alice", receipt: second.receipt, wait: TestWait.seconds)
            let grant = try #require(newer.json["grant"] as? [String: Any])
            #expect(grant["granted"] as? [String] == [second.transactionId])
            #expect(grant["alreadyGranted"] as? [String] == [first.transactionId])
            #expect(try await api.subscriber("alice").creditBalance == 200)

            let stolen = try await api.postReceipt(appUserId: "mallory", receipt: second.receipt, wait: TestWait.seconds)
            #expect(stolen.json["state"] as? String == "verified")
            let conflicts = ((stolen.json["grant"] as? [String: Any])?["conflicts"] as? [[String: Any]]) ?? []
            #expect(conflicts.count == 2)
            #expect(conflicts.allSatisfy { $0["code"] as? String == "original_transaction_owned_by_another_user" })
            #expect(try await api.subscriber("mallory").creditBalance == 0)
            #expect(try await api.subscriber("alice").creditBalance == 200)
            #expect(try await stack.store.countTransactions(appId: "demo") == 2)
        }
    }

    @Test("refund removes the entitlement; an expired subscription is not active; billing retry and grace show")
    func lifecycle() async throws {
        // Months of 3 s, so periods end within the test. Apple renews nothing by itself, so each
        // period ends when the test expects however slow the machine is (and the recovery's period
        // is the last), and the grace period outlasts the test.
        try await withStack(
            secondsPerMonth: 3,
            configureSimulator: { s in
                s.maximumRenewals = 0
                s.gracePeriodSeconds = 3600
            }
        ) { stack in
            let api = stack.api
            let sim = stack.simulator
            // Refund of a non-consumable.
            let device = try await sim.createDevice(bundleId: demoBundle)
            let noAds = try await sim.purchase(device: device, productId: "com.example.removeads")
            _ = try await api.postReceipt(appUserId: "refunded", receipt: noAds.receipt, wait: TestWait.seconds)
            #expect(try await api.subscriber("refunded").activeEntitlements == ["com.example.removeads"])
            try await sim.refund(transactionId: noAds.transactionId)
            let again = try await api.postReceipt(appUserId: "refunded", receipt: noAds.receipt, refresh: true, wait: TestWait.seconds)
            #expect(((again.json["grant"] as? [String: Any])?["revoked"] as? [String]) == [noAds.transactionId])
            let refunded = try await api.subscriber("refunded")
            #expect(refunded.activeEntitlements.isEmpty && refunded.history.first?.cancellationDate != nil)
            let ledger = try await api.adminGet("/v1/admin/apps/demo/ledger?environment=sandbox")
            let events = ((ledger.json["entries"] as? [[String: Any]]) ?? []).compactMap { $0["event"] as? String }
            #expect(events.sorted() == ["purchase", "refund"])

            // Three subscriptions: one lapses, one enters billing retry, one enters grace.
            func subscribe(_ user: String) async throws -> (UUID, SimulatorClient.Purchase) {
                let d = try await sim.createDevice(bundleId: demoBundle)
                let p = try await sim.purchase(device: d, productId: "com.example.pro.monthly")
                _ = try await api.postReceipt(appUserId: user, receipt: p.receipt, wait: TestWait.seconds)
                // Active for its 3 s, which a slow machine may already have spent: the status must
                // be what the period's end means at the instant the server computed it (`asOf`,
                // to the millisecond).
                let view = try await api.subscriber(user)
                let subscription = try #require(view.subscriptions.first)
                let end = try #require(subscription.expiresDate)
                #expect(
                    subscription.status == (end > view.asOf ? SubscriptionStatus.active : .expired) || abs(end.timeIntervalSince(view.asOf)) < 0.002,
                    "\(subscription) as of \(view.asOf)")
                return (d, p)
            }
            let (_, lapsing) = try await subscribe("lapsing")
            let (_, retrying) = try await subscribe("retrying")
            let (_, graceful) = try await subscribe("graceful")
            try await sim.cancelAutoRenew(originalTransactionId: lapsing.originalTransactionId)
            try await sim.failBilling(originalTransactionId: retrying.originalTransactionId, gracePeriod: false)
            try await sim.failBilling(originalTransactionId: graceful.originalTransactionId, gracePeriod: true)
            // A month and a bit passes on the clock Apple and the server share.
            stack.clock.advance(by: 3.5)
            for (user, p) in [("lapsing", lapsing), ("retrying", retrying), ("graceful", graceful)] {
                let r = try await api.postReceipt(appUserId: user, receipt: p.receipt, refresh: true, wait: TestWait.seconds)
                #expect(r.json["state"] as? String == "verified")
            }
            let lapsed = try await api.subscriber("lapsing")
            #expect(lapsed.subscriptions.first?.status == .expired && lapsed.activeEntitlements.isEmpty)
            #expect(lapsed.subscriptions.first?.autoRenewEnabled == false)
            let retry = try await api.subscriber("retrying")
            #expect(retry.subscriptions.first?.status == .inBillingRetry && retry.activeEntitlements.isEmpty)
            let grace = try await api.subscriber("graceful")
            #expect(grace.subscriptions.first?.status == .inGracePeriod && grace.activeEntitlements == ["com.example.pro.monthly"])

            // Billing recovers: a new period, active again (for the 3 s it lasts: the status must be
            // what its end means at the instant the server computed it).
            try await sim.recoverBilling(originalTransactionId: retrying.originalTransactionId)
            _ = try await api.postReceipt(appUserId: "retrying", receipt: retrying.receipt, refresh: true, wait: TestWait.seconds)
            let recovered = try await api.subscriber("retrying")
            let renewed = try #require(recovered.subscriptions.first)
            #expect(recovered.history.count == 2, "the first period and the recovery: \(recovered.history.map(\.transactionId))")
            let failedEnd = try #require(retry.subscriptions.first?.expiresDate)
            let renewedEnd = try #require(renewed.expiresDate)
            #expect(renewedEnd > failedEnd, "the recovery starts a new period")
            #expect(
                renewed.status == (renewedEnd > recovered.asOf ? SubscriptionStatus.active : .expired)
                    || abs(renewedEnd.timeIntervalSince(recovered.asOf)) < 0.002,
                "\(renewed) as of \(recovered.asOf)")
        }
    }

    @Test("a wrong shared secret holds the receipt as a configuration error until the configuration is fixed")
    func configurationError() async throws {
        try await withStack(
            configure: { c in c.apps[0].sharedSecret = "rotated-but-not-here" },
            configureSimulator: { s in s.apps[0].sharedSecret = DemoConfiguration.sharedSecret }
        ) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let p = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let held = try await stack.api.postReceipt(appUserId: "carol", receipt: p.receipt, wait: TestWait.seconds)
            #expect(held.json["state"] as? String == "configuration_error")
            #expect(held.json["reason"] as? String == "shared_secret_mismatch")
            #expect(held.json["appleStatuses"] as? [Int] == [21007, 21004])
            let listed = try await stack.api.adminGet("/v1/admin/verifications?state=configuration_error")
            #expect((listed.json["verifications"] as? [[String: Any]])?.count == 1)

            // The operator fixes the secret and restarts: the held verification runs again and verifies.
            await stack.stopServer()
            var fixed = stack.configuration
            fixed.apps[0].sharedSecret = DemoConfiguration.sharedSecret
            let (url, stop) = try await stack.startAnotherServer(configuration: fixed)
            let client = StorekeeperClient(
                http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: url), apiKey: stack.api.apiKey, adminKey: stack.api.adminKey)
            let final = try await client.waitForFinal(held.json["id"] as! String)
            try await stop()
            #expect(final["state"] as? String == "verified")
        }
    }
}
