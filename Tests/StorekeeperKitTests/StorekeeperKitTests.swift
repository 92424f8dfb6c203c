import AppStoreSimulator
import Crypto
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperKit
import StorekeeperKitSimulator
import StorekeeperServer
import StorekeeperTesting
import StorekeeperWire
import Synchronization
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// StorekeeperKit's core over real HTTP against the server and the App Store simulator: the
/// store is the simulator (real signed transactions), the server is the real one with a client
/// key, user tokens and signing keys.
@Suite("StorekeeperKit against the server")
struct StorekeeperKitTests {
    static let clientKey = "pk_test_storekeeperkit_0001"
    static let secret = "user-token-secret-of-the-apps-backend-0123"

    /// Which store front the SDK buys through: the simulator's own (`SimulatorStoreFront`), or
    /// `StoreKitStoreFront`, the file Xcode compiles, over the SDK's Linux declaration of StoreKit
    /// backed by the same simulated device. The tests run through both, to the same outcomes.
    enum Front: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case simulator
        case storeKit
        var testDescription: String { rawValue }
    }

    /// StorekeeperKit's store, watched: how often each transaction is finished, and whether the
    /// server had granted it by then. `inner` is the simulated device, which a test drives
    /// directly (Ask to Buy, deliveries, refunds) whichever front the SDK buys through.
    final class WatchedStore: StoreFront {
        let inner: SimulatorStoreFront
        let front: any StoreFront
        let finishedCount = Mutex<[String: Int]>([:])
        let finishedBeforeGrant = Mutex<[String]>([])
        /// Asked at each finish: had the server granted the transaction by then?
        let granted: @Sendable (String) async throws -> Bool

        init(inner: SimulatorStoreFront, through front: Front, granted: @escaping @Sendable (String) async throws -> Bool) {
            self.inner = inner
            switch front {
            case .simulator: self.front = inner
            case .storeKit: self.front = SimulatorStoreKit(device: inner).storeFront
            }
            self.granted = granted
        }

        func purchase(productId: String, appAccountToken: UUID, offer: StoreOffer?, billingPlan: BillingPlan?) async throws -> StorePurchaseResult {
            try await front.purchase(productId: productId, appAccountToken: appAccountToken, offer: offer, billingPlan: billingPlan)
        }

        func unfinished() async throws -> [StoreTransaction] { try await front.unfinished() }

        func updates() -> AsyncStream<StoreTransaction> { front.updates() }

        func restorable() async throws -> [StoreTransaction] { try await front.restorable() }

        func products(for ids: [String]) async throws -> [StoreProduct] { try await front.products(for: ids) }

        func appTransaction() async throws -> String? { try await front.appTransaction() }

        func showManageSubscriptions() async throws { try await front.showManageSubscriptions() }

        func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome {
            try await front.beginRefundRequest(transactionId: transactionId)
        }

        func messages() -> AsyncStream<StoreMessage> { front.messages() }

        func presentOfferCodeRedeemSheet() async throws { try await front.presentOfferCodeRedeemSheet() }

        func finish(_ transaction: StoreTransaction) async throws {
            if try await !granted(transaction.id) { finishedBeforeGrant.withLock { $0.append(transaction.id) } }
            try await front.finish(transaction)
            finishedCount.withLock { $0[transaction.id, default: 0] += 1 }
        }
    }

    /// What an updates listener reported, per transaction.
    /// What the SDK's listener reported, by transaction id, and a signal on each report.
    final class Heard: Sendable {
        let outcomes = Mutex<[String: [Storekeeper.Outcome]]>([:])
        private let reports: AsyncStream<Void>
        private let reported: AsyncStream<Void>.Continuation

        init() { (reports, reported) = AsyncStream.makeStream(of: Void.self) }

        func record(_ id: String, _ outcome: Storekeeper.Outcome) {
            outcomes.withLock { $0[id, default: []].append(outcome) }
            reported.yield()
        }

        /// Returns once the reports heard so far satisfy `condition`, checked at each report
        /// (one test reads one `Heard`).
        func until(_ condition: @escaping @Sendable ([String: [Storekeeper.Outcome]]) -> Bool) async throws {
            try await withTestWait("the listener's report") { [self] in
                if outcomes.withLock({ condition($0) }) { return }
                for await _ in reports where outcomes.withLock({ condition($0) }) { return }
            }
        }
    }

    /// Lets a test take the server away, or change answers on the way.
    final class Switchboard: ServerTransport {
        let inner = URLSessionTransport()
        let down = Mutex(false)
        let tamper = Mutex(false)
        /// Answers changed on the way.
        let tampered = Mutex(0)
        /// The last answer to each path, kept to be played back.
        let recorded = Mutex<[String: ServerAnswer]>([:])
        /// When set, every request is answered with the recorded answer to this path.
        let playBack = Mutex<String?>(nil)
        /// While set, the server's answer is held back from the SDK for good. The request still
        /// reaches the server, on a task of its own that the SDK's deadline does not cancel.
        let holdAnswers = Mutex(false)
        /// Requests the server answered, and a signal at each.
        let forwarded = Mutex(0)
        private let forwards = AsyncStream.makeStream(of: Void.self)

        private func countForwarded() {
            forwarded.withLock { $0 += 1 }
            forwards.continuation.yield()
        }

        /// Returns once the server has answered `count` requests through this transport.
        func untilForwarded(_ count: Int) async throws {
            try await withTestWait("\(count) answers from the server") { [self] in
                if forwarded.withLock({ $0 >= count }) { return }
                for await _ in forwards.stream where forwarded.withLock({ $0 >= count }) { return }
            }
        }
        /// When set, every request is answered with this status (and `Retry-After`), as by an
        /// overloaded server or a proxy in front of it; `refused` counts them.
        let overloaded = Mutex<(status: Int, retryAfter: String?)?>(nil)
        let refused = Mutex(0)

        func send(_ request: URLRequest) async throws -> ServerAnswer {
            if down.withLock({ $0 }) { throw URLError(.cannotConnectToHost) }
            if let answer = overloaded.withLock({ $0 }) {
                refused.withLock { $0 += 1 }
                return ServerAnswer(
                    status: answer.status, headers: answer.retryAfter.map { ["retry-after": $0] } ?? [:],
                    body: Data(#"{"error":{"code":"rate_limited","message":"slow down"}}"#.utf8))
            }
            if let path = playBack.withLock({ $0 }) {
                guard let old = recorded.withLock({ $0[path] }) else { throw URLError(.resourceUnavailable) }
                return old
            }
            if holdAnswers.withLock({ $0 }) {
                let inner = self.inner
                let forwarded = Task {
                    _ = try await inner.send(request)
                    self.countForwarded()
                }
                _ = await forwarded.result
                // Held until the SDK's deadline cancels the call: a stream that never yields ends
                // only on cancellation (no clock involved).
                let (held, holding) = AsyncStream<Void>.makeStream()
                for await _ in held {}
                holding.finish()
                throw CancellationError()
            }
            var answer = try await inner.send(request)
            countForwarded()
            if let path = request.url?.path { recorded.withLock { $0[path] = answer } }
            if tamper.withLock({ $0 }), !answer.body.isEmpty {
                tampered.withLock { $0 += 1 }
                answer.body = Data(
                    String(decoding: answer.body, as: UTF8.self).replacingOccurrences(of: "[]", with: #"["com.example.pro.monthly"]"#).utf8)
            }
            return answer
        }
    }

    func withKitStack(
        anonymous: Bool = false, serverAPI: Bool = false, configure: (inout StorekeeperConfiguration) -> Void = { _ in },
        _ body: (LocalStack, P256.Signing.PublicKey) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        var configuration = LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath(), serverAPI: serverAPI)
        configure(&configuration)
        configuration.apps[0].client = ClientAccess(
            key: Self.clientKey, userTokens: UserTokenPolicy(hs256Secret: Self.secret), allowAnonymous: anonymous, userRatePerSecond: 100,
            signingKeys: [ResponseSigningKey(id: "k1", privateKeyPEM: key.pemRepresentation)])
        let stack = try await LocalStack.start(configuration: configuration)
        do {
            try await body(stack, key.publicKey)
        } catch {
            try? await stack.stop()
            throw error
        }
        try await stack.stop()
    }

    func kit(
        _ stack: LocalStack, _ key: P256.Signing.PublicKey, store: WatchedStore, transport: Switchboard, state: URL, user: String = "ann",
        requestTimeout: TimeInterval? = nil
    )
        -> Storekeeper
    {
        let clock = stack.clock
        var configuration = Storekeeper.Configuration(
            serverURL: URL(string: stack.serverURL ?? "")!, clientKey: Self.clientKey, appUserId: user,
            userToken: { try UserTokens.hs256(user: user, secret: StorekeeperKitTests.secret, now: clock.now()) }, signingKeys: ["k1": key],
            stateDirectory: state)
        // The server holds each post until its grant is final (its own signal); how long that
        // takes depends on the machine, so the SDK waits as long as the tests wait for anything.
        configuration.waitSeconds = TestWait.seconds
        configuration.requestTimeout = requestTimeout
        return Storekeeper(configuration: configuration, store: store, transport: transport, now: { clock.now() })
    }

    func storeFront(_ stack: LocalStack, _ device: UUID, _ front: Front, state: URL = stateDirectory()) -> WatchedStore {
        let store = stack.store
        let inner = SimulatorStoreFront(simulatorURL: URL(string: stack.simulatorURL)!, device: device, stateDirectory: state)
        return WatchedStore(inner: inner, through: front) { id in
            let granted = try await store.transactions(appId: "demo", appUserId: "ann")
            return granted.contains { $0.transactionId == id }
        }
    }

    /// A device at the simulator, its watched store, and a transport the test controls.
    func shop(
        _ stack: LocalStack, _ front: Front, state: URL = stateDirectory()
    ) async throws
        -> (device: UUID, store: WatchedStore, transport: Switchboard)
    {
        let device = try await SimulatorStoreFront.createDevice(simulatorURL: URL(string: stack.simulatorURL)!, bundleId: DemoConfiguration.bundleId)
        return (device, storeFront(stack, device, front, state: state), Switchboard())
    }

    /// Ann subscribed to the monthly plan through `front`, with Apple's notifications flowing to
    /// the server: her SDK, its store, and the plan's transaction as the server stored it.
    func subscribed(
        _ stack: LocalStack, _ key: P256.Signing.PublicKey, _ front: Front
    ) async throws -> (sdk: Storekeeper, store: WatchedStore, plan: TransactionRecord) {
        try await stack.sendNotifications()
        let (_, store, transport) = try await shop(stack, front)
        let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
        guard case .granted = try await sdk.purchase(productId: "com.example.pro.monthly") else {
            throw StorekeeperKitError(.refused, "the plan was not granted")
        }
        return (sdk, store, try #require(try await stack.store.transactions(appId: "demo", appUserId: "ann").first))
    }

    static func stateDirectory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("storekeeperkit-\(UUID().uuidString)")
    }

    @Test("one version: the SDK's `Storekeeper.version`, the server's and its `/healthz` say the same release")
    func oneVersion() async throws {
        #expect(Storekeeper.version == StorekeeperVersion.current)
        #expect(
            StorekeeperVersion.current.split(separator: ".").count == 3
                && StorekeeperVersion.current.split(separator: ".").allSatisfy { Int($0) != nil })
        try await withKitStack { stack, _ in
            let health = try await stack.api.http.send(.GET, "/healthz")
            #expect(health.status == 200 && health.json["version"] as? String == Storekeeper.version, "\(health.text)")
        }
    }

    @Test("each product type: bought, granted, finished exactly once and never before the grant", arguments: Front.allCases)
    func buyEachType(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            #expect(Set(try await sdk.sellableProductIds()).isSuperset(of: ["com.example.removeads", "com.example.coins100"]))
            for product in ["com.example.removeads", "com.example.coins100", "com.example.season.pass", "com.example.pro.monthly"] {
                let before = store.finishedCount.withLock { $0.count }
                let outcome = try await sdk.purchase(productId: product)
                guard case .granted(let entitlements) = outcome else {
                    Issue.record("\(product): \(outcome)")
                    continue
                }
                #expect(store.finishedCount.withLock { $0.count } == before + 1)
                if product != "com.example.coins100" { #expect(entitlements.owns(product), "\(product): \(entitlements)") }
                // The demo's named entitlements, in the SDK's types.
                switch product {
                case "com.example.removeads": #expect(entitlements.isActive("no_ads") && !entitlements.isActive("pro"))
                case "com.example.season.pass":
                    let pro = try #require(entitlements.entitlements["pro"])
                    #expect(pro.isActive && pro.productId == product && pro.expiresAt != nil && pro.willRenew == false && pro.periodType == .normal)
                case "com.example.pro.monthly":
                    // Two products unlock pro: the pass and the plan; the one ending later stands.
                    #expect(entitlements.isActive("pro") && entitlements.entitlements["pro"]?.isFamilyShared == false)
                default: #expect(Set(entitlements.entitlements.keys) == ["no_ads"], "coins unlock nothing; no_ads is from before")
                }
            }
            #expect(store.finishedCount.withLock { $0.values.allSatisfy { $0 == 1 } }, "each finished once")
            #expect(try await store.unfinished().isEmpty)
            #expect(store.finishedBeforeGrant.withLock { $0 }.isEmpty, "finish only after the server granted")
        }
    }

    @Test(
        "a promotional offer: signed by the server for a lapsed subscriber, passed to the store with the purchase, granted at the offer's price; refused for one who never subscribed",
        arguments: Front.allCases)
    func promotionalOffer(_ front: Front) async throws {
        try await withKitStack(serverAPI: true) { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            let bought = try await sdk.purchase(productId: "com.example.pro.monthly")
            guard case .granted = bought else {
                Issue.record("the plan was not granted: \(bought)")
                return
            }
            let plan = try #require(try await stack.store.transactions(appId: "demo", appUserId: "ann").first)
            try await stack.simulator.cancelAutoRenew(originalTransactionId: plan.originalTransactionId)
            try await stack.simulator.advanceClock(seconds: 2 * 86_400)

            let outcome = try await sdk.purchase(productId: "com.example.pro.monthly", promotionalOfferId: "pro_comeback")
            guard case .granted(let entitlements) = outcome else {
                Issue.record("the offer's purchase: \(outcome)")
                return
            }
            #expect(entitlements.isActive("pro"))
            let taken = try await stack.store.transactions(appId: "demo", appUserId: "ann").filter { $0.offer?.identifier == "pro_comeback" }
            #expect(taken.count == 1 && taken.first?.offer?.type == 2 && taken.first?.price?.milliunits == 2_495, "\(taken)")
            #expect(try await store.unfinished().isEmpty)

            let (_, otherStore, otherTransport) = try await shop(stack, front)
            let newcomer = kit(stack, key, store: otherStore, transport: otherTransport, state: Self.stateDirectory(), user: "bea")
            let refused = await #expect(throws: StorekeeperKitError.self) {
                try await newcomer.purchase(productId: "com.example.pro.monthly", promotionalOfferId: "pro_comeback")
            }
            #expect(refused?.serverCode == "offer_not_eligible", "\(String(describing: refused))")
        }
    }

    @Test(
        "introductory eligibility and win-back: the server's JWS goes to the store with the purchase; a lapsed subscriber is told the win-back offers Apple names and buys one, which the store refuses a subscriber",
        arguments: Front.allCases)
    func introductoryAndWinBack(_ front: Front) async throws {
        try await withKitStack(
            serverAPI: true, configure: { $0.apps[0].offers.append(.init(id: "winback", productId: "com.example.pro.monthly", kind: .winBack)) }
        ) { stack, key in
            try await stack.sendNotifications()
            let (_, store, transport) = try await shop(stack, front)
            let state = Self.stateDirectory()
            let sdk = kit(stack, key, store: store, transport: transport, state: state)
            guard case .granted = try await sdk.purchase(productId: "com.example.coins100") else {
                Issue.record("the coins were not granted")
                return
            }
            // The server knows a transaction of ann now: its eligibility JWS names it.
            let eligibility = try await sdk.introductoryEligibility(productId: "com.example.pro.monthly")
            #expect(eligibility.eligible && eligibility.reason == "new_to_group" && eligibility.jws != nil, "\(eligibility)")
            let bought = try await sdk.purchase(productId: "com.example.pro.monthly", introductoryEligibility: eligibility)
            guard case .granted(let entitlements) = bought else {
                Issue.record("the plan bought with the eligibility: \(bought)")
                return
            }
            #expect(entitlements.isActive("pro"))
            // The store front hands the JWS to the store, which checks it: a forged one is refused.
            await #expect(throws: (any Error).self) {
                try await store.purchase(
                    productId: "com.example.pro.monthly", appAccountToken: sdk.appAccountToken, offer: .introductoryEligibility(jws: "a.b.c"),
                    billingPlan: nil)
            }
            let after = try await sdk.introductoryEligibility(productId: "com.example.pro.monthly")
            #expect(!after.eligible && after.reason == "subscribed_in_group", "\(after)")
            await #expect(throws: StorekeeperKitError.self) {
                try await sdk.purchase(productId: "com.example.coins100", introductoryEligibility: after)
            }
            #expect(try await sdk.winBackOffers().isEmpty, "subscribed: nothing to win back")
            // Asked for anyway, the store decides: a subscriber may not take it, nothing is charged.
            let early = await #expect(throws: StorekeeperKitError.self) {
                try await sdk.purchase(productId: "com.example.pro.monthly", winBackOfferId: "winback")
            }
            #expect(early?.serverCode == "ineligibleForOffer", "\(String(describing: early))")
            #expect(try Self.journaled(state) == 0, "the refused intent leaves the journal")

            let plan = try #require(
                try await stack.store.transactions(appId: "demo", appUserId: "ann").first { $0.productId == "com.example.pro.monthly" })
            try await stack.simulator.cancelAutoRenew(originalTransactionId: plan.originalTransactionId)
            try await stack.simulator.advanceClock(seconds: 2 * 86_400)
            try await stack.settle()
            #expect(try await sdk.winBackOffers().map(\.offerId) == ["winback"], "lapsed: the offer Apple's renewal info names")

            // Bought as any purchase: journaled, posted, granted, then finished once.
            let offer = try #require(try await sdk.winBackOffers().first)
            let won = try await sdk.purchase(winBackOffer: offer)
            guard case .granted(let back) = won else {
                Issue.record("the win-back purchase: \(won)")
                return
            }
            #expect(back.isActive("pro"))
            let taken = try await stack.store.transactions(appId: "demo", appUserId: "ann").filter { $0.offer?.identifier == "winback" }
            #expect(taken.count == 1 && taken.first?.offer?.type == 4, "\(taken)")
            #expect(try await store.unfinished().isEmpty && store.finishedBeforeGrant.withLock { $0 }.isEmpty)
            #expect(store.finishedCount.withLock { $0 }.values.allSatisfy { $0 == 1 })
            #expect(try Self.journaled(state) == 0)
        }
    }

    @Test(
        "the device's app transaction: posted, verified by the server and kept on the user with the version first obtained; the subscriber answer carries it",
        arguments: Front.allCases)
    func appTransaction(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let device = try await SimulatorStoreFront.createDevice(
                simulatorURL: URL(string: stack.simulatorURL)!, bundleId: DemoConfiguration.bundleId, originalApplicationVersion: "1.2")
            let store = storeFront(stack, device, front)
            let sdk = kit(stack, key, store: store, transport: Switchboard(), state: Self.stateDirectory())
            let info = try #require(try await sdk.postAppTransaction())
            #expect(info.originalAppVersion == "1.2" && info.environment == "Sandbox" && !info.appTransactionId.isEmpty, "\(info)")
            #expect(info.originalPlatform == "iOS")
            let view = try await stack.api.subscriber("ann")
            #expect(view.appTransaction?.originalAppVersion == "1.2" && view.appTransaction?.appTransactionId == info.appTransactionId)
            #expect(view.appTransaction?.obtainedBefore(version: "2.0") == true && view.appTransaction?.obtainedBefore(version: "1.1") == false)
            // Posted again (each launch): the same record, newer or as new.
            let again = try #require(try await sdk.postAppTransaction())
            #expect(again.appTransactionId == info.appTransactionId && again.signedDate >= info.signedDate)
        }
    }

    @Test(
        "a plan change waiting for the next renewal: the entitlement and the subscription name it as pending; at the renewal the new plan stands and nothing is pending",
        arguments: Front.allCases)
    func pendingPlanChange(_ front: Front) async throws {
        try await withKitStack(configure: { configuration in
            configuration.apps[0].products.append(
                Product(
                    productId: "com.example.pro.weekly", type: .autoRenewable, duration: "P1W", priceMicros: 1_490_000, currency: "USD",
                    displayName: "Pro, weekly"))
            if let pro = configuration.apps[0].entitlements.firstIndex(where: { $0.id == "pro" }) {
                configuration.apps[0].entitlements[pro].products.append("com.example.pro.weekly")
            }
        }) { stack, key in
            let (sdk, _, plan) = try await subscribed(stack, key, front)
            #expect(try await sdk.entitlements().entitlements["pro"]?.pendingProductId == nil)

            struct Change: Encodable { var productId: String }
            let changed = try await stack.simulator.http.send(
                .POST, "/sim/subscriptions/\(plan.originalTransactionId)/renewal-product", json: Change(productId: "com.example.pro.weekly"))
            #expect(changed.status == 200, "\(changed.text)")
            try await stack.settle()
            #expect(
                try await sdk.entitlements().entitlements["pro"]?.pendingProductId == "com.example.pro.weekly",
                "DID_CHANGE_RENEWAL_PREF reaches the server")
            let pending = try #require(try await sdk.entitlements().entitlements["pro"])
            #expect(pending.isActive && pending.productId == "com.example.pro.monthly", "access stays the current plan's until the renewal")
            let view = try await stack.api.subscriber("ann")
            #expect(view.subscriptions.map(\.pendingProductId) == ["com.example.pro.weekly"], "\(view.subscriptions)")

            // The renewal moves the subscription to the plan chosen.
            try await stack.simulator.advanceClock(seconds: 301)
            try await stack.settle()
            let renewed = try await sdk.entitlements().entitlements["pro"]
            #expect(
                renewed?.productId == "com.example.pro.weekly" && renewed?.pendingProductId == nil && renewed?.isActive == true,
                "DID_RENEW in the new plan reaches the server")
        }
    }

    @Test(
        "a price increase: pending on the entitlement until the customer agrees; StoreKit's consent message held by the app, then displayed; agreed, it renews at the new price",
        arguments: Front.allCases)
    func priceIncrease(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (sdk, store, plan) = try await subscribed(stack, key, front)
            #expect(try await sdk.entitlements().entitlements["pro"]?.priceIncreaseStatus == nil)
            // Nothing to say yet: the stream ends empty.
            var none: [StoreMessage] = []
            for await message in sdk.storeMessages() { none.append(message) }
            #expect(none.isEmpty)

            struct Increase: Encodable {
                var priceMicros: Int64
                var consentRequired: Bool
            }
            let raised = try await stack.simulator.http.send(
                .POST, "/sim/subscriptions/\(plan.originalTransactionId)/price-increase",
                json: Increase(priceMicros: 6_990_000, consentRequired: true))
            #expect(raised.status == 200, "\(raised.text)")
            try await stack.settle()
            #expect(try await sdk.entitlements().entitlements["pro"]?.priceIncreaseStatus == .pending, "PRICE_INCREASE (PENDING) reaches the server")
            #expect(try await stack.api.subscriber("ann").subscriptions.map(\.priceIncreaseStatus) == [.pending])

            // The app listens, so StoreKit leaves the consent sheet to it; held, nothing is shown.
            var held: [StoreMessage] = []
            for await message in sdk.storeMessages() { held.append(message) }
            #expect(held.map(\.reason) == [.priceIncreaseConsent])
            #expect(store.inner.displayedMessages.isEmpty)
            let consent = try #require(held.first)
            try await consent.display()
            #expect(store.inner.displayedMessages == [.priceIncreaseConsent])

            // The customer agrees in the sheet.
            let agreed = try await stack.simulator.http.send(.POST, "/sim/subscriptions/\(plan.originalTransactionId)/price-increase/consent")
            #expect(agreed.status == 200, "\(agreed.text)")
            try await stack.settle()
            #expect(try await sdk.entitlements().entitlements["pro"]?.priceIncreaseStatus == .agreed, "PRICE_INCREASE (ACCEPTED) reaches the server")
            var after: [StoreMessage] = []
            for await message in sdk.storeMessages() { after.append(message) }
            #expect(after.isEmpty, "nothing waits for consent any more")
            let events = try await stack.api.events("?limit=100").filter { $0.event.appUserId == "ann" }.map(\.event.type)
            #expect(events.filter { $0 == .priceIncreasePending || $0 == .priceIncreaseAgreed } == [.priceIncreasePending, .priceIncreaseAgreed])

            // The renewal is charged the new price, and the increase is behind it.
            try await stack.simulator.advanceClock(seconds: 301)
            try await stack.settle()
            let renewals = try await stack.store.transactions(appId: "demo", appUserId: "ann").filter {
                $0.originalTransactionId == plan.originalTransactionId && $0.transactionId != plan.transactionId
            }
            let statusAfterRenewal = try await sdk.entitlements().entitlements["pro"]?.priceIncreaseStatus
            #expect(!renewals.isEmpty && statusAfterRenewal == nil, "DID_RENEW at the new price reaches the server")
            let sold = try await stack.simulator.http.send(.GET, "/sim/transactions")
            #expect(sold.text.contains("6990000"), "the renewal was charged 6.99")
        }
    }

    @Test(
        "a price increase never agreed to: the subscription lapses at its renewal date with Apple's reason 3, and access ends",
        arguments: Front.allCases)
    func priceIncreaseDeclined(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (sdk, _, plan) = try await subscribed(stack, key, front)
            let raised = try await stack.simulator.http.send(
                .POST, "/sim/subscriptions/\(plan.originalTransactionId)/price-increase", json: ["priceMicros": 6_990_000])
            #expect(raised.status == 200, "\(raised.text)")
            try await stack.settle()
            #expect(try await sdk.entitlements().entitlements["pro"]?.priceIncreaseStatus == .pending)
            try await stack.simulator.advanceClock(seconds: 301)
            try await stack.settle()
            #expect(
                try await stack.api.events("?limit=100").contains {
                    $0.event.appUserId == "ann" && $0.event.type == .expiration && $0.event.details?.expirationReason == "3"
                }, "EXPIRED (PRICE_INCREASE) reaches the server")
            let pro = try #require(try await sdk.entitlements().entitlements["pro"])
            #expect(!pro.isActive && pro.willRenew == false)
        }
    }

    @Test(
        "an offer code redeemed in the store's sheet arrives as an update, is posted for this user, granted with offer type 3 and finished once; a used one-time code buys nothing",
        arguments: Front.allCases)
    func offerCodeRedeemed(_ front: Front) async throws {
        try await withKitStack { stack, key in
            try await stack.sendNotifications()
            struct Code: Encodable {
                var code: String
                var productId: String
                var referenceName: String
                var discountType: String
                var period: String
            }
            let created = try await stack.simulator.http.send(
                .POST, "/sim/apps/\(DemoConfiguration.bundleId)/offer-codes",
                json: Code(
                    code: "spring-7f3k", productId: "com.example.pro.monthly", referenceName: "spring", discountType: "FREE_TRIAL", period: "P1W"))
            #expect(created.status == 201, "\(created.text)")
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            let heard = Heard()
            let listening = Task {
                await sdk.listenForUpdates(baseDelay: .milliseconds(50)) { tx, outcome in
                    heard.record(tx.id, outcome)
                }
            }
            defer { listening.cancel() }
            try await withTestWait("the app's listener") { await store.inner.untilListening() }
            // The customer closes the sheet: nothing happens.
            try await sdk.presentOfferCodeRedeemSheet()
            #expect(heard.outcomes.withLock { $0.isEmpty } && store.inner.redeemRefusals.isEmpty)

            store.inner.setNextRedeemCode("SPRING-7F3K")
            try await sdk.presentOfferCodeRedeemSheet()
            try await heard.until { $0.values.joined().contains { if case .granted = $0 { true } else { false } } }
            let redeemed = try #require(try await stack.store.transactions(appId: "demo", appUserId: "ann").first)
            #expect(redeemed.productId == "com.example.pro.monthly" && redeemed.offer?.type == 3 && redeemed.offer?.identifier == "spring")
            #expect(store.finishedCount.withLock { $0[redeemed.transactionId] } == 1)
            #expect(store.finishedBeforeGrant.withLock { $0 }.isEmpty)
            #expect(try await store.unfinished().isEmpty)
            let pro = try #require(try await sdk.entitlements().entitlements["pro"])
            #expect(pro.isActive && pro.periodType == .promotional, "an offer code's period, as every offer but the introductory one")

            // A one-time code redeems once: another customer typing it buys nothing.
            let other = try await SimulatorStoreFront.createDevice(
                simulatorURL: URL(string: stack.simulatorURL)!, bundleId: DemoConfiguration.bundleId)
            let second = SimulatorStoreFront(simulatorURL: URL(string: stack.simulatorURL)!, device: other, stateDirectory: Self.stateDirectory())
            second.setNextRedeemCode("spring-7f3k")
            try await second.presentOfferCodeRedeemSheet()
            #expect(second.redeemRefusals == ["offerCodeAlreadyRedeemed"])
            #expect(try await second.unfinished().isEmpty)
            second.setNextRedeemCode("NO-SUCH-CODE")
            try await second.presentOfferCodeRedeemSheet()
            #expect(second.redeemRefusals == ["offerCodeAlreadyRedeemed", "invalidOfferCode"])
        }
    }

    @Test(
        "a billing plan chosen: a commitment product bought by the month (twelve payments committed) or upfront for the year (twelve monthly prices at once); a product without plans refuses one and charges nothing",
        arguments: Front.allCases)
    func billingPlan(_ front: Front) async throws {
        try await withKitStack { stack, key in
            try await stack.simulator.setCommitmentProducts(["com.example.pro.monthly"])
            for (user, plan) in [("ann", BillingPlan.monthly), ("bob", BillingPlan.upfront)] {
                let (_, store, transport) = try await shop(stack, front)
                let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory(), user: user)
                guard case .granted(let access) = try await sdk.purchase(productId: "com.example.pro.monthly", billingPlan: plan) else {
                    Issue.record("\(plan) was not granted")
                    return
                }
                #expect(access.isActive("pro"))
                let subscription = try #require(try await stack.api.subscriber(user).subscriptions.first)
                #expect(subscription.billingPlanType == plan.rawValue, "\(subscription)")
                let stored = try #require(try await stack.store.transactions(appId: "demo", appUserId: user).first)
                switch plan {
                case .monthly:
                    #expect(subscription.commitment?.totalBillingPeriods == 12 && subscription.commitment?.billingPeriodNumber == 1)
                case .upfront:
                    #expect(subscription.commitment == nil && stored.billingPlanType == "BILLED_UPFRONT")
                    let days = try #require(stored.expiresDate).timeIntervalSince(stored.purchaseDate)
                    #expect(days > 11 * 300, "a year's period (twelve accelerated months), not one")
                }
            }
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory(), user: "cal")
            await #expect(throws: StorekeeperKitError.self) { try await sdk.purchase(productId: "com.example.removeads", billingPlan: .monthly) }
            #expect(try await stack.store.transactions(appId: "demo", appUserId: "cal").isEmpty, "nothing charged or granted")
        }
    }

    @Test(
        "a customer center: the manage-subscriptions sheet reaches the store; a refund request goes to Apple, and the server hears it from Apple as refund_requested",
        arguments: Front.allCases)
    func customerCenter(_ front: Front) async throws {
        try await withKitStack { stack, key in
            try await stack.sendNotifications()
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            guard case .granted = try await sdk.purchase(productId: "com.example.coins100") else {
                Issue.record("the coins were not granted")
                return
            }
            let coins = try #require(try await stack.store.transactions(appId: "demo", appUserId: "ann").first)
            try await sdk.showManageSubscriptions()
            #expect(store.inner.manageSubscriptionsShown == 1)

            #expect(try await sdk.beginRefundRequest(transactionId: coins.transactionId) == .requested)
            // The app's own reports, recorded before the calls returned.
            let reported = try await stack.api.events("?limit=50").map(\.event).filter {
                $0.appUserId == "ann" && [.manageSubscriptionsShownInApp, .refundRequestedInApp].contains($0.type)
            }
            #expect(reported.map(\.type) == [.manageSubscriptionsShownInApp, .refundRequestedInApp])
            #expect(reported.last?.transactionId == coins.transactionId && reported.last?.details?.reason == "requested")
            try await stack.settle()
            #expect(
                try await stack.api.events("?limit=50").contains {
                    $0.event.type == .refundRequested && $0.event.appUserId == "ann" && $0.event.transactionId == coins.transactionId
                }, "Apple's CONSUMPTION_REQUEST reaches the server")
            // Not an App Store transaction id: refused before any sheet.
            await #expect(throws: StorekeeperKitError.self) { try await sdk.beginRefundRequest(transactionId: "not-a-number") }
        }
    }

    @Test(
        "offerings(): the server's current offering joined to the store's products; targeting by storefront; a package bought grants",
        arguments: Front.allCases)
    func offerings(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            let offerings = try await sdk.offerings()
            let current = try #require(offerings.current)
            #expect(current.id == "default" && offerings.selectedBy == .current && Set(offerings.all.keys) == ["default", "no_ads"])
            #expect(current.packages.map(\.id) == ["$monthly", "season"] && current.monthly?.type == .monthly)
            #expect(current.metadata["title"]?.string == "Go Pro")
            // Priced by the store, exactly: 4.99 USD from the simulator's micro-units.
            let monthly = try #require(current.monthly)
            #expect(monthly.storeProduct.price == Decimal(string: "4.99") && monthly.storeProduct.currencyCode == "USD")
            // The retired pack is not for sale: the server leaves it out.
            #expect(offerings["no_ads"]?.packages.map(\.productId) == ["com.example.removeads"])
            #expect(offerings["no_ads"]?.lifetime?.type == .lifetime)

            let french = try await sdk.offerings(storefront: "FRA", appVersion: "1.0")
            #expect(french.current?.id == "no_ads" && french.selectedBy == .rule(id: "france"))

            let outcome = try await sdk.purchase(package: try #require(french.current?.lifetime))
            guard case .granted(let entitlements) = outcome else {
                Issue.record("\(outcome)")
                return
            }
            #expect(entitlements.isActive("no_ads"))
        }
    }

    @Test(
        "anonymous, then logIn: bought under an anonymous id, the purchase is the signed-in user's; logOut starts a new anonymous id",
        arguments: Front.allCases)
    func anonymousThenLogIn(_ front: Front) async throws {
        try await withKitStack(anonymous: true) { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let state = Self.stateDirectory()
            let clock = stack.clock
            var configuration = Storekeeper.Configuration(
                serverURL: URL(string: stack.serverURL ?? "")!, clientKey: Self.clientKey, appUserId: nil, signingKeys: ["k1": key],
                stateDirectory: state)
            configuration.waitSeconds = TestWait.seconds
            let sdk = Storekeeper(configuration: configuration, store: store, transport: transport, now: { clock.now() })
            let anonymous = await sdk.appUserId
            #expect(AnonymousId.isAnonymous(anonymous))
            guard case .granted(let owned) = try await sdk.purchase(productId: "com.example.removeads") else {
                Issue.record("the anonymous purchase was not granted")
                return
            }
            #expect(owned.appUserId == anonymous && owned.isActive("no_ads"))
            // The next launch keeps the same anonymous id.
            #expect(await Storekeeper(configuration: configuration, store: store, transport: transport).appUserId == anonymous)

            let token: @Sendable () async throws -> String = {
                try UserTokens.hs256(user: "ann", secret: StorekeeperKitTests.secret, now: clock.now())
            }
            let result = try await sdk.logIn("ann", userToken: token)
            guard case .linked(let moved) = result else {
                Issue.record("\(result)")
                return
            }
            #expect(moved.count == 1)
            #expect(await sdk.appUserId == "ann")
            let ann = try await sdk.entitlements()
            #expect(ann.appUserId == "ann" && ann.isActive("no_ads"))
            #expect(try await stack.api.subscriber("ann").aliases == [anonymous])
            // A new launch of the app, configured for ann, sees the same.
            #expect(try await sdk.logIn("ann", userToken: token) == .alreadyLinked)

            try await sdk.logOut()
            let next = await sdk.appUserId
            #expect(AnonymousId.isAnonymous(next) && next != anonymous)
            #expect(try await sdk.entitlements().activeEntitlements.isEmpty)
        }
    }

    @Test(
        "start owns the updates listener until stop: a transaction handed over by the store is delivered without the app's own task",
        arguments: Front.allCases)
    func startAndStop(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (device, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            let heard = Heard()
            await sdk.start { transaction, outcome in
                if let transaction { heard.record(transaction.id, outcome) }
            }
            #expect(await sdk.isListening)
            // Bought on another device: the store hands it over once the listener is open.
            let token = await sdk.appAccountToken.uuidString.lowercased()
            let elsewhere = try await stack.simulator.purchase(device: device, productId: "com.example.removeads", appAccountToken: token)
            let transaction = StoreTransaction(
                id: elsewhere.transactionId, productId: "com.example.removeads", signedTransaction: elsewhere.signedTransaction)
            try await withTestWait("the app's listener") { await store.inner.untilListening() }
            try store.inner.deliver(transaction)
            try await heard.until { $0[transaction.id] != nil }
            guard case .granted? = heard.outcomes.withLock({ $0[transaction.id]?.last }) else {
                Issue.record("\(heard.outcomes.withLock { $0 })")
                return
            }
            await sdk.stop()
            #expect(await sdk.isListening == false)
        }
    }

    /// The purchase journal's entries, as on disk (docs/SDK.md: `purchases.json`).
    static func journaled(_ state: URL) throws -> Int {
        guard let data = try? Data(contentsOf: state.appendingPathComponent("purchases.json")) else { return 0 }
        return (try JSONSerialization.jsonObject(with: data) as? [Any])?.count ?? 0
    }

    @Test(
        "the store's other endings leave nothing behind: cancelled, thrown, Ask to Buy declined; Ask to Buy approved arrives through updates and is granted once; a refund arriving through updates withdraws it",
        arguments: Front.allCases)
    func storeEndings(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let state = Self.stateDirectory()
            let sdk = kit(stack, key, store: store, transport: transport, state: state)

            store.inner.setNextPurchase(.cancelled)
            #expect(try await sdk.purchase(productId: "com.example.removeads") == .cancelled)
            store.inner.setNextPurchase(.fails)
            await #expect(throws: (any Error).self) { try await sdk.purchase(productId: "com.example.removeads") }
            #expect(try Self.journaled(state) == 0, "no intent is left for a purchase that never charged")

            store.inner.setNextPurchase(.askToBuy)
            #expect(try await sdk.purchase(productId: "com.example.season.pass") == .pending(.awaitingApproval))
            store.inner.decline(productId: "com.example.season.pass")
            #expect(try Self.journaled(state) == 0)
            #expect(try await sdk.deliverPending().isEmpty)

            // Approved later: the store hands it over; the SDK's listener journals, posts and finishes it.
            store.inner.setNextPurchase(.askToBuy)
            #expect(try await sdk.purchase(productId: "com.example.removeads") == .pending(.awaitingApproval))
            let heard = Heard()
            await sdk.start { transaction, outcome in
                if let transaction { heard.record(transaction.id, outcome) }
            }
            try await withTestWait("the app's listener") { await store.inner.untilListening() }
            let approved = try await store.inner.approve(productId: "com.example.removeads")
            try await heard.until { ($0[approved.id] ?? []).contains { if case .granted = $0 { true } else { false } } }
            #expect(store.finishedCount.withLock { $0[approved.id] } == 1)
            #expect(try Self.journaled(state) == 0)
            #expect(try await sdk.entitlements().isActive("no_ads"))

            // Apple refunds it: the revoked copy arrives through updates, is posted, and the
            // access goes; the update is finished like any other.
            _ = try await store.inner.refund(approved)
            try await heard.until {
                ($0[approved.id] ?? []).contains { if case .granted(let entitlements) = $0 { !entitlements.isActive("no_ads") } else { false } }
            }
            await sdk.stop()
            #expect(store.finishedCount.withLock { $0[approved.id] } == 2)
            #expect(try await !sdk.entitlements().isActive("no_ads"))
        }
    }

    @Test("killed between payment and post: the next launch finds the purchase and completes it, once", arguments: Front.allCases)
    func crashBetweenPaymentAndPost(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let device = try await SimulatorStoreFront.createDevice(
                simulatorURL: URL(string: stack.simulatorURL)!, bundleId: DemoConfiguration.bundleId)
            let state = Self.stateDirectory()
            let transport = Switchboard()
            // The first launch pays, then cannot reach the server: the SDK and its store are
            // dropped there, as if the app were killed before posting.
            transport.down.withLock { $0 = true }
            do {
                let store = storeFront(stack, device, front, state: state)
                let first = kit(stack, key, store: store, transport: transport, state: state)
                let outcome = try await first.purchase(productId: "com.example.removeads")
                #expect(outcome == .pending(.serverUnavailable))
                #expect(try await store.unfinished().count == 1 && store.finishedCount.withLock { $0.isEmpty }, "not finished without the grant")
            }

            // Relaunch: new instances on the same files, the server reachable again.
            transport.down.withLock { $0 = false }
            let store = storeFront(stack, device, front, state: state)
            let second = kit(stack, key, store: store, transport: transport, state: state)
            let outcomes = try await second.deliverPending()
            #expect(outcomes.count == 1 && outcomes.values.allSatisfy { if case .granted = $0 { true } else { false } }, "\(outcomes)")
            #expect(try await store.unfinished().isEmpty && store.finishedCount.withLock { $0.values.reduce(0, +) } == 1)
            #expect(try await second.deliverPending().isEmpty, "nothing left to send")
            let granted = try await stack.store.transactions(appId: "demo", appUserId: "ann")
            #expect(granted.count == 1, "granted once")
        }
    }

    @Test("server down: the purchase stays unfinished and is retried with backoff until the server answers", arguments: Front.allCases)
    func serverDownThenUp(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            transport.down.withLock { $0 = true }
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            #expect(try await sdk.purchase(productId: "com.example.coins100") == .pending(.serverUnavailable))
            // The server comes back during the retries.
            let retrying = Task {
                try await sdk.deliverPendingWithBackoff(attempts: 30, baseDelay: .milliseconds(50), maximumDelay: .milliseconds(200))
            }
            #expect(try await store.unfinished().count == 1)
            transport.down.withLock { $0 = false }
            let outcomes = try await retrying.value
            #expect(outcomes.values.allSatisfy { if case .granted = $0 { true } else { false } } && !outcomes.isEmpty, "\(outcomes)")
            #expect(try await store.unfinished().isEmpty)
        }
    }

    @Test(
        "server slow: an answer later than the deadline leaves the purchase pending and unfinished; the resend is granted once",
        arguments: Front.allCases)
    func serverSlow(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            // The server gets the post and grants, but its answer never comes within the SDK's
            // deadline (short here, so the test is quick; whatever the machine's speed, the
            // held answer is later).
            transport.holdAnswers.withLock { $0 = true }
            let state = Self.stateDirectory()
            let impatient = kit(stack, key, store: store, transport: transport, state: state, requestTimeout: 2)
            #expect(try await impatient.purchase(productId: "com.example.coins100") == .pending(.serverUnavailable))
            #expect(try await store.unfinished().count == 1 && store.finishedCount.withLock { $0.isEmpty }, "not finished without a granted answer")
            try await transport.untilForwarded(1)
            #expect(transport.forwarded.withLock { $0 } == 1, "the post reached the server")
            // The server answers in time again: the next launch resends, and it is granted once.
            transport.holdAnswers.withLock { $0 = false }
            let sdk = kit(stack, key, store: store, transport: transport, state: state)
            let outcomes = try await sdk.deliverPendingWithBackoff(attempts: 5, baseDelay: .milliseconds(50))
            #expect(outcomes.count == 1 && outcomes.values.allSatisfy { if case .granted = $0 { true } else { false } }, "\(outcomes)")
            #expect(try await store.unfinished().isEmpty && store.finishedCount.withLock { $0.values.reduce(0, +) } == 1)
            let granted = try await stack.store.transactions(appId: "demo", appUserId: "ann")
            #expect(granted.count == 1 && transport.forwarded.withLock { $0 } >= 2, "posted twice, granted once")
            #expect(try await sdk.entitlements().creditBalance == 100, "credited once")
        }
    }

    @Test("transaction updates while running (another device, Ask to Buy approved): sent, granted, finished once", arguments: Front.allCases)
    func transactionUpdates(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (device, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            let heard = Heard()
            let listening = Task {
                await sdk.listenForUpdates(baseDelay: .milliseconds(50)) { tx, outcome in
                    heard.record(tx.id, outcome)
                }
            }
            defer { listening.cancel() }
            // Bought outside this app's purchase call, then handed over by the store once the
            // listener listens.
            let token = await sdk.appAccountToken.uuidString.lowercased()
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads", appAccountToken: token)
            let transaction = StoreTransaction(
                id: bought.transactionId, productId: "com.example.removeads", signedTransaction: bought.signedTransaction)
            try await withTestWait("the app's listener") { await store.inner.untilListening() }
            try store.inner.deliver(transaction)
            // The listener reports after the finish: wait for the report, then count finishes.
            try await heard.until { ($0[transaction.id] ?? []).contains { if case .granted = $0 { true } else { false } } }
            #expect(store.finishedCount.withLock { $0[transaction.id] } == 1)
            #expect(try await sdk.entitlements().owns("com.example.removeads"))
            #expect(try await store.unfinished().isEmpty)
            #expect(store.finishedBeforeGrant.withLock { $0 }.isEmpty)
        }
    }

    @Test(
        "restore on request: a purchase the app never posted (reinstalled) is sent and granted; one already granted is not counted twice; listeners hear it",
        .timeLimit(.minutes(3)), arguments: Front.allCases)
    func restoreOnRequest(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let device = try await SimulatorStoreFront.createDevice(
                simulatorURL: URL(string: stack.simulatorURL)!, bundleId: DemoConfiguration.bundleId)
            let transport = Switchboard()
            let firstState = Self.stateDirectory()
            let first = kit(stack, key, store: storeFront(stack, device, front, state: firstState), transport: transport, state: firstState)
            guard case .granted = try await first.purchase(productId: "com.example.season.pass") else {
                Issue.record("the pass was not granted")
                return
            }
            // Paid, then the app was deleted before it posted: a reinstall has no journal and no
            // unfinished queue, so only a restore finds the purchase.
            let token = await first.appAccountToken.uuidString.lowercased()
            _ = try await stack.simulator.purchase(device: device, productId: "com.example.removeads", appAccountToken: token)
            _ = try await stack.simulator.purchase(device: device, productId: "com.example.coins100", appAccountToken: token)
            let state = Self.stateDirectory()
            let store = storeFront(stack, device, front, state: state)
            let reinstalled = kit(stack, key, store: store, transport: transport, state: state)
            #expect(try await reinstalled.deliverPending().isEmpty, "nothing is sent at launch")
            #expect(try await !reinstalled.entitlements().owns("com.example.removeads"))
            let updates = reinstalled.entitlementUpdates()

            let restored = try await reinstalled.restore()
            #expect(restored.outcomes.count == 2, "the pass and Remove Ads; never the consumable: \(restored.outcomes)")
            #expect(restored.outcomes.values.allSatisfy { if case .granted = $0 { true } else { false } }, "\(restored.outcomes)")
            #expect(restored.entitlements.owns("com.example.removeads") && restored.entitlements.owns("com.example.season.pass"))
            // The listener heard the change (the newest answer is kept until it reads), and a
            // listener that starts later begins with it.
            var heard = updates.makeAsyncIterator()
            let latest = await heard.next()
            #expect(latest?.isActive("no_ads") == true && latest?.isActive("pro") == true, "\(String(describing: latest))")
            var late = reinstalled.entitlementUpdates().makeAsyncIterator()
            #expect(await late.next() == latest)
            let granted = try await stack.store.transactions(appId: "demo", appUserId: "ann")
            #expect(granted.count == 2, "the pass once, Remove Ads once: \(granted.map(\.transactionId))")
        }
    }

    @Test(
        "a tampered, replayed or other user's answer is rejected and the cached entitlements stay; another user's purchase is refused",
        arguments: Front.allCases)
    func forgedAnswers(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (device, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            let verified = try await sdk.entitlements()
            #expect(verified.activeEntitlements.isEmpty)
            transport.tamper.withLock { $0 = true }
            // The forged "you own everything" is not believed; the last verified answer stands.
            let shown = try await sdk.entitlements()
            #expect(shown == verified && !shown.owns("com.example.pro.monthly"))
            #expect(transport.tampered.withLock { $0 } == 1, "the forged answer did reach the SDK")
            transport.tamper.withLock { $0 = false }

            // A replay: ann's old signed "owns nothing" answer, played back after she bought the
            // pass. It answered another nonce, so it is not believed.
            transport.recorded.withLock { $0["ann, before the pass"] = $0["/v1/subscribers/ann"] }
            guard case .granted(let owning) = try await sdk.purchase(productId: "com.example.season.pass") else {
                Issue.record("the pass was not granted")
                return
            }
            #expect(owning.owns("com.example.season.pass"))
            transport.playBack.withLock { $0 = "ann, before the pass" }
            #expect(try await sdk.entitlements().owns("com.example.season.pass"), "the replayed answer is not believed")
            transport.playBack.withLock { $0 = nil }
            let bob = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory(), user: "bob")
            #expect(try await bob.entitlements().activeEntitlements.isEmpty)
            // Another user's signed answer, bob's, handed to ann: it answered another path.
            transport.playBack.withLock { $0 = "/v1/subscribers/bob" }
            #expect(try await sdk.entitlements().owns("com.example.season.pass"), "bob's answer is not taken for ann's")
            transport.playBack.withLock { $0 = nil }

            // A transaction bought for another user, delivered by ann's app: refused for good,
            // not finished.
            let zeds = try await stack.simulator.purchase(
                device: device, productId: "com.example.removeads",
                appAccountToken: AppAccountToken.derive(appUserId: "zed").uuidString.lowercased())
            let stolen = StoreTransaction(id: zeds.transactionId, productId: "com.example.removeads", signedTransaction: zeds.signedTransaction)
            try store.inner.deliver(stolen)
            let outcomes = try await sdk.deliverPending()
            guard case .refused(let code, _)? = outcomes[stolen.id] else {
                Issue.record("\(outcomes)")
                return
            }
            #expect(code == .appAccountTokenMismatch)
            #expect(store.finishedCount.withLock { $0[stolen.id] } == nil)
            // Refused for good: not sent again at the next launch, and left for its owner.
            let relaunched = try await sdk.deliverPending()
            #expect(relaunched[stolen.id] == nil && store.finishedCount.withLock { $0[stolen.id] } == nil)
        }
    }

    @Test(
        "bought, died before posting, claimed by another account, relaunched: left unfinished and journaled as owned by another account",
        arguments: Front.allCases)
    func claimedByAnotherAccount(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let device = try await SimulatorStoreFront.createDevice(
                simulatorURL: URL(string: stack.simulatorURL)!, bundleId: DemoConfiguration.bundleId)
            let state = Self.stateDirectory()
            let transport = Switchboard()
            transport.down.withLock { $0 = true }
            let store = storeFront(stack, device, front, state: state)
            let first = kit(stack, key, store: store, transport: transport, state: state, user: "ivan")
            #expect(try await first.purchase(productId: "com.example.removeads") == .pending(.serverUnavailable))
            let paid = try #require(try await store.unfinished().first)

            // Before ivan's app comes back, the purchase is granted to another account (here by
            // the backend, which may vouch for the token the purchase carries).
            let token = AppAccountToken.derive(appUserId: "ivan").uuidString.lowercased()
            let claimed = try await stack.api.postSignedTransaction(
                appUserId: "mallory", signedTransaction: paid.signedTransaction, appAccountToken: token, wait: TestWait.seconds)
            #expect(claimed.status == 200 && claimed.json["state"] as? String == "verified", "\(claimed.text)")

            transport.down.withLock { $0 = false }
            let relaunched = kit(stack, key, store: storeFront(stack, device, front, state: state), transport: transport, state: state, user: "ivan")
            for launch in 1...2 {
                let outcomes = try await relaunched.deliverPending()
                guard case .ownedByAnotherAccount? = outcomes[paid.id] else {
                    Issue.record("launch \(launch): \(outcomes)")
                    return
                }
            }
            #expect(store.finishedCount.withLock { $0[paid.id] } == nil, "never finished")
            #expect(try await store.unfinished().contains { $0.id == paid.id }, "still unfinished at the store")
            #expect(try await !relaunched.entitlements().owns("com.example.removeads"))
        }
    }

    @Test(
        "429 and 503 mean the server cannot answer now: the cache is served, Retry-After is honoured, a purchase stays pending",
        arguments: Front.allCases)
    func overloadedServerServesTheCache(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let sdk = kit(stack, key, store: store, transport: transport, state: Self.stateDirectory())
            guard case .granted = try await sdk.purchase(productId: "com.example.season.pass") else {
                Issue.record("the pass was not granted")
                return
            }
            for (status, retryAfter) in [(429, "120"), (503, nil as String?)] {
                transport.overloaded.withLock { $0 = (status, retryAfter) }
                let shown = try await sdk.entitlements()
                #expect(shown.owns("com.example.season.pass"), "\(status): the cache is served")
                if retryAfter != nil {
                    let before = transport.refused.withLock { $0 }
                    _ = try await sdk.entitlements()
                    #expect(transport.refused.withLock { $0 } == before, "nothing sent before Retry-After")
                    stack.clock.advance(by: 121)
                }
            }
            transport.overloaded.withLock { $0 = (429, nil) }
            #expect(try await sdk.purchase(productId: "com.example.coins100") == .pending(.serverUnavailable))
            #expect(try await store.unfinished().count == 1)
        }
    }

    @Test("an edited offline cache is discarded: it no longer verifies with the pinned key", arguments: Front.allCases)
    func editedCacheIsDiscarded(_ front: Front) async throws {
        try await withKitStack { stack, key in
            let (_, store, transport) = try await shop(stack, front)
            let state = Self.stateDirectory()
            let sdk = kit(stack, key, store: store, transport: transport, state: state)
            #expect(try await sdk.entitlements().activeEntitlements.isEmpty)
            let file = state.appendingPathComponent("entitlements.json")
            #expect(await sdk.cachedEntitlements() != nil, "a verified answer is cached")

            // Everything owned and 999999 credits, written into the cached answer's body.
            var stored = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: file)) as? [String: Any])
            let body = try #require(Data(base64Encoded: stored["body"] as? String ?? ""))
            var view = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            view["activeEntitlements"] = ["com.example.pro.monthly", "com.example.removeads", "com.example.season.pass"]
            view["creditBalance"] = 999_999
            stored["body"] = try JSONSerialization.data(withJSONObject: view).base64EncodedString()
            try JSONSerialization.data(withJSONObject: stored).write(to: file)

            transport.down.withLock { $0 = true }
            let reloaded = kit(stack, key, store: store, transport: transport, state: state)
            #expect(await reloaded.cachedEntitlements() == nil, "the edited cache is not believed")
            await #expect(throws: StorekeeperKitError.self) { try await reloaded.entitlements() }
            #expect(!FileManager.default.fileExists(atPath: file.path), "and it is discarded")
        }
    }
}
