import Foundation
import StorekeeperKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The App Store simulator (`storekeeper serve --simulator`, port 8090) as the store, for Linux
/// and tests: purchases are real signed transactions from the simulator's `/sim` API. Like
/// StoreKit, it keeps the unfinished transactions across launches, in a file.
public final class SimulatorStoreFront: StoreFront, @unchecked Sendable {
    let simulatorURL: URL
    let device: UUID
    let file: URL
    let lock = NSLock()
    /// The open `updates()` streams.
    private var listeners: [UUID: AsyncStream<StoreTransaction>.Continuation] = [:]
    /// How the next purchase goes (then back to `.completes`).
    private var next: NextPurchase = .completes
    /// Ask to Buy requests waiting for a parent: product id → the token the app bought with.
    private var awaitingApproval: [String: UUID] = [:]

    /// How a purchase at the store can go, as StoreKit's can.
    public enum NextPurchase: Sendable {
        /// Charged and returned at once.
        case completes
        /// Ask to Buy: `.pending` now; `approve(productId:)` charges it later and hands the
        /// transaction over through `updates()`, `decline(productId:)` drops it.
        case askToBuy
        /// The user closed the sheet.
        case cancelled
        /// The purchase call throws (the store unreachable, the sheet failed) and nothing is charged.
        case fails
    }

    /// How the next `purchase` goes; the one after it completes again.
    public func setNextPurchase(_ outcome: NextPurchase) { lock.withLock { next = outcome } }

    /// `device`: the simulated device buying (create one with `createDevice`). `stateDirectory`
    /// holds the unfinished-transaction queue.
    public init(simulatorURL: URL, device: UUID, stateDirectory: URL) {
        self.simulatorURL = simulatorURL
        self.device = device
        self.file = stateDirectory.appendingPathComponent("simulator-unfinished-\(device.uuidString).json")
    }

    /// A new simulated device of the app `bundleId`.
    /// `originalApplicationVersion`: the app version its customer first obtained (the app
    /// transaction's; the simulator's default when nil).
    public static func createDevice(
        simulatorURL: URL, bundleId: String, environment: String = "sandbox", originalApplicationVersion: String? = nil
    ) async throws -> UUID {
        struct Body: Encodable {
            var bundleId: String
            var environment: String
            var originalApplicationVersion: String?
        }
        struct Answer: Decodable { var deviceId: String }
        let data = try await post(
            simulatorURL.appendingPathComponent("sim/devices"),
            body: Body(bundleId: bundleId, environment: environment, originalApplicationVersion: originalApplicationVersion))
        guard let id = UUID(uuidString: try JSONDecoder().decode(Answer.self, from: data).deviceId) else { throw URLError(.cannotParseResponse) }
        return id
    }

    public func purchase(productId: String, appAccountToken: UUID, offer: StoreOffer?, billingPlan: BillingPlan?) async throws -> StorePurchaseResult
    {
        let outcome = lock.withLock {
            defer { next = .completes }
            return next
        }
        switch outcome {
        case .completes: break
        case .askToBuy:
            lock.withLock { awaitingApproval[productId] = appAccountToken }
            return .pending
        case .cancelled: return .cancelled
        case .fails: throw URLError(.networkConnectionLost)
        }
        let transaction = try await charge(productId: productId, appAccountToken: appAccountToken, offer: offer, billingPlan: billingPlan)
        try update { $0[transaction.id] = transaction }
        return .purchased(transaction)
    }

    /// A parent approves an Ask to Buy request: the store charges, and the transaction arrives
    /// through `updates()` (and stays unfinished until the app finishes it), as StoreKit's does.
    @discardableResult
    public func approve(productId: String) async throws -> StoreTransaction {
        guard let token = lock.withLock({ awaitingApproval.removeValue(forKey: productId) }) else {
            throw URLError(.fileDoesNotExist)
        }
        let transaction = try await charge(productId: productId, appAccountToken: token)
        try deliver(transaction)
        return transaction
    }

    /// Apple refunds a purchase (or revokes a family member's copy, `revoke`): the transaction
    /// arrives again through `updates()`, signed with its revocation, as StoreKit's does; the app
    /// must post it so the server withdraws the access.
    @discardableResult
    public func refund(_ transaction: StoreTransaction, revoke: Bool = false) async throws -> StoreTransaction {
        struct Empty: Encodable {}
        let action = revoke ? "revoke" : "refund"
        _ = try await Self.post(simulatorURL.appendingPathComponent("sim/transactions/\(transaction.id)/\(action)"), body: Empty())
        struct Signed: Decodable {
            var transactionId: String
            var productId: String
            var signedTransaction: String
        }
        let answer = try await URLSessionTransport().send(
            URLRequest(url: simulatorURL.appendingPathComponent("sim/transactions/\(transaction.id)/signed")))
        guard answer.status == 200 else { throw URLError(.badServerResponse) }
        let signed = try JSONDecoder().decode(Signed.self, from: answer.body)
        let revoked = StoreTransaction(id: signed.transactionId, productId: signed.productId, signedTransaction: signed.signedTransaction)
        try deliver(revoked)
        return revoked
    }

    /// A parent declines: nothing is charged and nothing ever arrives.
    public func decline(productId: String) { lock.withLock { _ = awaitingApproval.removeValue(forKey: productId) } }

    /// A purchase made at the simulator: a real signed transaction.
    private func charge(
        productId: String, appAccountToken: UUID, offer: StoreOffer? = nil, billingPlan: BillingPlan? = nil
    ) async throws -> StoreTransaction {
        struct Offer: Encodable { var jws: String }
        struct Body: Encodable {
            var productId: String
            var quantity: Int
            var appAccountToken: String
            /// As StoreKit sends the V2 JWS.
            var promotionalOffer: Offer?
            /// As StoreKit sends the server's eligibility JWS.
            var introductoryOfferEligibility: String?
            /// As StoreKit sends a win-back offer: by its id.
            var winBackOffer: String?
            /// As StoreKit sends `billingPlanType(_:)`, by Apple's name.
            var billingPlanType: String?
        }
        struct Answer: Decodable {
            struct Transaction: Decodable { var transaction_id: String }
            var transaction: Transaction
            var signedTransaction: String
        }
        let url = simulatorURL.appendingPathComponent("sim/devices/\(device.uuidString)/purchases")
        let data = try await Self.post(
            url,
            body: Body(
                productId: productId, quantity: 1, appAccountToken: appAccountToken.uuidString.lowercased(),
                promotionalOffer: { if case .promotional(let signed)? = offer { Offer(jws: signed.jws) } else { nil } }(),
                introductoryOfferEligibility: { if case .introductoryEligibility(let jws)? = offer { jws } else { nil } }(),
                winBackOffer: { if case .winBack(let id)? = offer { id } else { nil } }(), billingPlanType: billingPlan?.rawValue))
        let answer = try JSONDecoder().decode(Answer.self, from: data)
        return StoreTransaction(id: answer.transaction.transaction_id, productId: productId, signedTransaction: answer.signedTransaction)
    }

    /// The simulator's catalog of the apps it serves, priced from its `priceMicros` (exact) and
    /// shown as "4.99 USD"; named by product id, since the simulator has no localized names.
    public func products(for ids: [String]) async throws -> [StoreProduct] {
        try await catalog(for: ids).map(\.product)
    }

    /// A product of the simulator's catalog with what StoreKit tells of its subscription.
    public struct Listed: Sendable {
        public var product: StoreProduct
        public var autoRenewable: Bool
        /// Every win-back offer configured for it (StoreKit's `subscription.winBackOffers`),
        /// whoever asks: eligibility is decided at purchase.
        public var winBackOfferIds: [String]
    }

    /// The products among `ids` in the simulator's catalog, in the order asked.
    public func catalog(for ids: [String]) async throws -> [Listed] {
        struct App: Decodable {
            struct Product: Decodable {
                struct Offer: Decodable {
                    var id: String
                    var winBack: Bool?
                }
                var productId: String
                var kind: String
                var priceMicros: Int64?
                var currency: String?
                var offers: [Offer]?
            }
            var products: [Product]
        }
        let answer = try await URLSessionTransport().send(URLRequest(url: simulatorURL.appendingPathComponent("sim/apps")))
        guard answer.status == 200 else { throw URLError(.badServerResponse) }
        let data = answer.body
        let wanted = Set(ids)
        var found: [String: Listed] = [:]
        for product in try JSONDecoder().decode([App].self, from: data).flatMap(\.products) where wanted.contains(product.productId) {
            let price = Decimal(product.priceMicros ?? 0) / 1_000_000
            let shown = "\(price)" + (product.currency.map { " " + $0 } ?? "")
            found[product.productId] = Listed(
                product: StoreProduct(
                    id: product.productId, displayName: product.productId, displayPrice: shown, price: price, currencyCode: product.currency),
                autoRenewable: product.kind == "auto_renewable", winBackOfferIds: (product.offers ?? []).filter { $0.winBack == true }.map(\.id))
        }
        return ids.compactMap { found[$0] }
    }

    public func unfinished() async throws -> [StoreTransaction] {
        lock.withLock { Array(load().values).sorted { $0.id < $1.id } }
    }

    public func finish(_ transaction: StoreTransaction) async throws {
        try update { $0.removeValue(forKey: transaction.id) }
    }

    /// Adds a transaction to the unfinished queue as if the store had delivered it (a
    /// purchase made on another device, an Ask to Buy approved later), and hands it to every
    /// open `updates()` stream.
    public func deliver(_ transaction: StoreTransaction) throws {
        try update { $0[transaction.id] = transaction }
        for listener in lock.withLock({ Array(listeners.values) }) { listener.yield(transaction) }
    }

    /// How many `updates()` streams are open (a test hands a transaction over once one is).
    public var listening: Int { lock.withLock { listeners.count } }

    /// Returns once an `updates()` stream is open: the signal a test waits on before it hands a
    /// transaction over (the app's listener opens its stream on a task of its own).
    /// Returns at once when the task is cancelled.
    public func untilListening() async {
        let id = UUID()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let open = lock.withLock { () -> Bool in
                    if !listeners.isEmpty || Task.isCancelled { return true }
                    listeningWaiters[id] = continuation
                    return false
                }
                if open { continuation.resume() }
            }
        } onCancel: {
            lock.withLock { listeningWaiters.removeValue(forKey: id) }?.resume()
        }
    }

    private var listeningWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]

    public func updates() -> AsyncStream<StoreTransaction> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: StoreTransaction.self)
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.listeners.removeValue(forKey: id) } }
        let waiting = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            listeners[id] = continuation
            defer { listeningWaiters = [:] }
            return Array(listeningWaiters.values)
        }
        for waiter in waiting { waiter.resume() }
        return stream
    }

    /// The simulator's App Store is always up to date, so there is nothing to sync: what the
    /// device's customer owns now, each as the latest signed transaction of its product.
    public func restorable() async throws -> [StoreTransaction] {
        struct Current: Decodable {
            var transactionId: String
            var productId: String
            var signedTransaction: String
        }
        var request = URLRequest(url: simulatorURL.appendingPathComponent("sim/devices/\(device.uuidString)/current-entitlements"))
        request.httpMethod = "GET"
        let answer = try await URLSessionTransport().send(request)
        guard answer.status == 200 else { throw URLError(.badServerResponse) }
        return try JSONDecoder().decode([Current].self, from: answer.body).map {
            StoreTransaction(id: $0.transactionId, productId: $0.productId, signedTransaction: $0.signedTransaction)
        }
    }

    /// How often the manage-subscriptions sheet was shown on this device.
    public var manageSubscriptionsShown: Int { lock.withLock { shownManageSubscriptions } }
    private var shownManageSubscriptions = 0

    /// The simulator has no sheet to show: it counts that one was asked for.
    public func showManageSubscriptions() async throws { lock.withLock { shownManageSubscriptions += 1 } }

    /// The customer asks Apple for a refund of `transactionId` (the simulator then sends the
    /// app's server a CONSUMPTION_REQUEST, as Apple does).
    public func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome {
        struct Body: Encodable { var reason: String }
        _ = try await Self.post(
            simulatorURL.appendingPathComponent("sim/transactions/\(transactionId)/refund-request"), body: Body(reason: "UNINTENDED_PURCHASE"))
        return .requested
    }

    /// What the customer types into the next offer code redemption sheet (nil: they close it).
    public func setNextRedeemCode(_ code: String?) { lock.withLock { nextRedeemCode = code } }
    private var nextRedeemCode: String?
    /// The store's refusals shown in the sheet (`invalidOfferCode`, `offerCodeAlreadyRedeemed`), in order.
    public var redeemRefusals: [String] { lock.withLock { refusedCodes } }
    private var refusedCodes: [String] = []

    /// The sheet, with the customer typing the code set by `setNextRedeemCode`: the simulator
    /// redeems it (`POST /sim/devices/{id}/offer-code-redemptions`) and the purchase arrives
    /// through `updates()`, unfinished, as StoreKit hands it over. A refusal is shown in the
    /// sheet, as Apple's is, and nothing arrives.
    public func presentOfferCodeRedeemSheet() async throws {
        guard
            let code = lock.withLock({
                defer { nextRedeemCode = nil }; return nextRedeemCode
            })
        else { return }
        struct Body: Encodable { var code: String }
        struct Answer: Decodable {
            struct Transaction: Decodable {
                var transaction_id: String
                var product_id: String
            }
            var transaction: Transaction
            var signedTransaction: String
        }
        let data: Data
        do {
            data = try await Self.post(
                simulatorURL.appendingPathComponent("sim/devices/\(device.uuidString)/offer-code-redemptions"), body: Body(code: code))
        } catch let refusal as StorekeeperKitError {
            lock.withLock { refusedCodes.append(refusal.serverCode ?? "refused") }
            return
        }
        let answer = try JSONDecoder().decode(Answer.self, from: data)
        try deliver(
            StoreTransaction(
                id: answer.transaction.transaction_id, productId: answer.transaction.product_id, signedTransaction: answer.signedTransaction))
    }

    /// A message the App Store has for this device's customer, as the simulator lists it.
    public struct PendingMessage: Sendable, Hashable {
        public var reason: StoreMessage.Reason
        public var originalTransactionId: String
    }

    /// The messages pending for this device's customer now (`GET /sim/devices/{id}/messages`).
    public func pendingMessages() async throws -> [PendingMessage] {
        struct Listed: Decodable {
            var reason: String
            var originalTransactionId: String
        }
        struct Answer: Decodable { var messages: [Listed] }
        let answer = try await URLSessionTransport().send(
            URLRequest(url: simulatorURL.appendingPathComponent("sim/devices/\(device.uuidString)/messages")))
        guard answer.status == 200 else { throw URLError(.badServerResponse) }
        return try JSONDecoder().decode(Answer.self, from: answer.body).messages.map { listed in
            let reason: StoreMessage.Reason =
                switch listed.reason {
                case "priceIncreaseConsent": .priceIncreaseConsent
                case "billingIssue": .billingIssue
                case "winBackOffer": .winBackOffer
                default: .generic
                }
            return PendingMessage(reason: reason, originalTransactionId: listed.originalTransactionId)
        }
    }

    /// The messages shown on this device, in order (the sheet itself is the customer's: they
    /// agree to a price increase through `POST /sim/subscriptions/{id}/price-increase/consent`).
    public var displayedMessages: [StoreMessage.Reason] { lock.withLock { shownMessages } }
    private var shownMessages: [StoreMessage.Reason] = []

    /// Records that a message's sheet was shown.
    public func displayed(_ reason: StoreMessage.Reason) { lock.withLock { shownMessages.append(reason) } }

    /// The messages pending when read, as StoreKit hands them over at launch; the stream then ends.
    public func messages() -> AsyncStream<StoreMessage> {
        AsyncStream { continuation in
            let listing = Task {
                for pending in (try? await pendingMessages()) ?? [] {
                    continuation.yield(StoreMessage(reason: pending.reason) { [self] in displayed(pending.reason) })
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in listing.cancel() }
        }
    }

    /// The device's app transaction, signed by the simulator now.
    public func appTransaction() async throws -> String? {
        struct Answer: Decodable { var signedAppTransaction: String }
        let answer = try await URLSessionTransport().send(
            URLRequest(url: simulatorURL.appendingPathComponent("sim/devices/\(device.uuidString)/app-transaction")))
        guard answer.status == 200 else { throw URLError(.badServerResponse) }
        return try JSONDecoder().decode(Answer.self, from: answer.body).signedAppTransaction
    }

    private func load() -> [String: StoreTransaction] {
        guard let data = try? Data(contentsOf: file) else { return [:] }
        return (try? JSONDecoder().decode([String: StoreTransaction].self, from: data)) ?? [:]
    }

    private func update(_ change: (inout [String: StoreTransaction]) -> Void) throws {
        try lock.withLock {
            var queue = load()
            change(&queue)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try JSONEncoder().encode(queue).write(to: file, options: .atomic)
        }
    }

    private static func post(_ url: URL, body: some Encodable) async throws -> Data {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(body)
        let answer = try await URLSessionTransport().send(request)
        guard (200..<300).contains(answer.status) else {
            // The store's refusal (an offer's signature, StoreKit's `Product.PurchaseError` names).
            if let code = try? JSONDecoder().decode(StoreRefusal.self, from: answer.body).error.code {
                throw StorekeeperKitError(.refused, "the store refused: \(code)", serverCode: code)
            }
            throw URLError(.badServerResponse)
        }
        return answer.body
    }
}

/// The simulator's error body (`{"error": {"code": …}}`).
private struct StoreRefusal: Decodable {
    struct Inner: Decodable { var code: String }
    var error: Inner
}
