import Crypto
import Foundation
import StorekeeperWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The app's side of server mode. Buys through a `StoreFront`, keeps every purchase in a
/// journal on disk until the server granted it, finishes a transaction only after the grant,
/// and believes only answers whose signature verifies with a pinned key.
public actor Storekeeper {
    public struct Configuration: Sendable {
        public var serverURL: URL
        /// The app's publishable client key (never the secret API key).
        public var clientKey: String
        /// The signed-in user; nil: nobody is signed in yet, and StorekeeperKit speaks for an
        /// anonymous id of its own (`$anon:` and a UUID, kept in `stateDirectory`) until `logIn`.
        public var appUserId: String?
        /// A fresh user token from the app's backend, when the app uses them.
        public var userToken: (@Sendable () async throws -> String)?
        /// Pinned public keys of the server's signing keys, by key id. Empty: answers are not
        /// checked (only for a server without signing keys; never in a shipped app).
        public var signingKeys: [String: P256.Signing.PublicKey]
        /// Where the purchase journal and the entitlement cache live.
        public var stateDirectory: URL
        /// How far ahead of this device's clock a kept answer's signature may be and still be
        /// shown offline (a live answer is believed whatever the device's clock says).
        public var answerTolerance: TimeInterval = 300
        /// Where the signed time of the newest entitlements answer seen for each user is kept,
        /// so an older answer put back (a restored copy of the app's files) is never shown.
        /// Nil: the Keychain where the platform has one, else a file in `stateDirectory`.
        public var newestAnswers: (any NewestAnswerStore)?
        /// How long cached entitlements may be shown when the server cannot be reached.
        public var entitlementStaleness: TimeInterval = 3 * 86_400
        /// How long the server may hold a submission's answer for the grant.
        public var waitSeconds: Double = 10
        /// How long one call may take in all, the server's wait included; a slower answer is
        /// treated like no answer (the purchase stays pending and unfinished). Nil: 20 seconds
        /// more than `waitSeconds`.
        public var requestTimeout: TimeInterval?

        public init(
            serverURL: URL, clientKey: String, appUserId: String?, userToken: (@Sendable () async throws -> String)? = nil,
            signingKeys: [String: P256.Signing.PublicKey], stateDirectory: URL
        ) {
            self.serverURL = serverURL
            self.clientKey = clientKey
            self.appUserId = appUserId
            self.userToken = userToken
            self.signingKeys = signingKeys
            self.stateDirectory = stateDirectory
        }
    }

    /// What a purchase, or the delivery of a transaction, came to.
    public enum Outcome: Sendable, Hashable {
        /// The server granted it and the store was told to finish it.
        case granted(Entitlements)
        /// Not settled yet (the store waits for approval, or the server could not be reached):
        /// it stays in the journal and unfinished, and is sent again.
        case pending(PendingReason)
        case cancelled
        /// The server refused it for good; it is not sent again for this user. A transaction no
        /// one can ever be granted (`code.isAboutTheTransaction`) is finished; one bought for
        /// another account stays unfinished for that account's next launch.
        case refused(code: RefusalCode, message: String)
        /// The purchase is genuine but the server holds it for another account of this app
        /// (its original transaction was granted to someone else first). It is left unfinished
        /// and stays in the journal, so support can move it and the next launch sees it again;
        /// never unlock for it.
        case ownedByAnotherAccount(message: String)
    }

    let configuration: Configuration
    /// The user this instance speaks for now: the configured one, an anonymous id, or whoever
    /// `logIn` signed in.
    public internal(set) var appUserId: String
    var userToken: (@Sendable () async throws -> String)?
    var identity: IdentityState
    /// The listener `start` runs until `stop`.
    var listener: Task<Void, Never>?
    let store: any StoreFront
    let transport: any ServerTransport
    let journal: PurchaseJournal
    let cache: EntitlementCache
    let check: AnswerCheck
    let newestAnswers: any NewestAnswerStore
    let now: @Sendable () -> Date
    /// Set by a 429 or 503's `Retry-After`: until then no call goes out and callers hear
    /// `serverUnavailable` (the cache is served meanwhile).
    var retryNotBefore: Date?
    let updates = EntitlementUpdates()

    public init(
        configuration: Configuration, store: any StoreFront, transport: any ServerTransport = URLSessionTransport(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        identity = IdentityState.load(from: configuration.stateDirectory, configured: configuration.appUserId)
        appUserId = identity.appUserId
        userToken = configuration.appUserId == nil ? nil : configuration.userToken
        self.store = store
        self.transport = transport
        self.now = now
        journal = PurchaseJournal(file: configuration.stateDirectory.appendingPathComponent("purchases.json"))
        cache = EntitlementCache(file: configuration.stateDirectory.appendingPathComponent("entitlements.json"))
        check = AnswerCheck(keys: configuration.signingKeys, tolerance: configuration.answerTolerance)
        newestAnswers = configuration.newestAnswers ?? NewestAnswers.platformDefault(stateDirectory: configuration.stateDirectory)
    }

    /// The token every purchase of this user carries.
    public var appAccountToken: UUID { AppAccountToken.derive(appUserId: appUserId) }

    /// Product ids the server says may be sold (then ask StoreKit for their localized details).
    public func sellableProductIds() async throws -> [String] {
        let answer = try await call("GET", "/v1/products", body: nil)
        guard answer.status == 200 else { throw refusal(answer) }
        return try WireJSON.makeDecoder().decode(ProductList.self, from: answer.body).products.map(\.productId)
    }

    /// What the paywall shows (docs/OFFERINGS.md): the server's offerings for this user, each
    /// package joined to the store's localized product (packages the store does not sell here
    /// are left out). `storefront` (Apple's alpha-3 code) and `appVersion` let the server's
    /// targeting rules choose; they only choose what is shown.
    public func offerings(storefront: String? = nil, appVersion: String? = nil) async throws -> Offerings {
        var query: [String] = []
        if let storefront { query.append("storefront=" + (storefront.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? "")) }
        if let appVersion { query.append("appVersion=" + (appVersion.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? "")) }
        let answer = try await call("GET", "/v1/offerings" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")), body: nil)
        guard answer.status == 200 else { throw refusal(answer) }
        guard let wire = try? WireJSON.makeDecoder().decode(OfferingsAnswer.self, from: answer.body) else {
            throw StorekeeperKitError(.forgedAnswer, "not an offerings answer")
        }
        let ids = Array(Set(wire.offerings.flatMap { $0.packages.map(\.productId) })).sorted()
        return Offerings(wire, products: ids.isEmpty ? [] : try await store.products(for: ids))
    }

    /// Buys the package's product, exactly as `purchase(productId:)`.
    public func purchase(package: Package) async throws -> Outcome {
        try await purchase(productId: package.productId)
    }

    /// Buys `productId`: the intent is journaled before the store charges, the transaction as
    /// soon as the store returns it, and it is delivered to the server at once.
    public func purchase(productId: String) async throws -> Outcome {
        try await purchase(productId: productId, offer: nil)
    }

    /// Buys `productId` at a promotional offer's price: the server signs the offer for this user
    /// (only an offer the app configured, and only if the user may take it: otherwise `refused`
    /// with `offer_not_eligible`), and StoreKit gets the signature with the purchase.
    public func purchase(productId: String, promotionalOfferId: String) async throws -> Outcome {
        try await purchase(productId: productId, offer: .promotional(try await signedOffer(productId: productId, offerId: promotionalOfferId)))
    }

    /// Whether the server lets this user take `productId`'s introductory offer, with the JWS
    /// StoreKit takes in place of its own records (docs/OFFERS.md). `jws` is nil when the server
    /// knows no transaction of the user: StoreKit then decides alone.
    public func introductoryEligibility(productId: String) async throws -> IntroductoryEligibility {
        let body = try JSONEncoder().encode(IntroductoryOfferRequest(productId: productId))
        let answer = try await call("POST", subscriberPath("offers/introductory"), body: body)
        guard answer.status == 200 else { throw refusal(answer) }
        guard let decided = try? WireJSON.makeDecoder().decode(IntroductoryEligibility.self, from: answer.body), decided.productId == productId else {
            throw StorekeeperKitError(.forgedAnswer, "not an eligibility answer for \(productId)")
        }
        return decided
    }

    /// Buys `productId` with the server's introductory-offer decision passed to the store.
    public func purchase(productId: String, introductoryEligibility: IntroductoryEligibility) async throws -> Outcome {
        guard introductoryEligibility.productId == productId else {
            throw StorekeeperKitError(.refused, "the eligibility is for \(introductoryEligibility.productId), not \(productId)")
        }
        return try await purchase(productId: productId, offer: introductoryEligibility.jws.map { .introductoryEligibility(jws: $0) })
    }

    /// The win-back offers Apple would sell this user now (a lapsed subscriber; docs/OFFERS.md).
    /// StoreKit sells them by id (`Product.SubscriptionInfo.winBackOffers`); nothing is signed.
    public func winBackOffers() async throws -> [WinBackOffer] {
        let answer = try await call("GET", subscriberPath("offers/win-back"), body: nil)
        guard answer.status == 200 else { throw refusal(answer) }
        guard let listed = try? WireJSON.makeDecoder().decode(WinBackOffers.self, from: answer.body) else {
            throw StorekeeperKitError(.forgedAnswer, "not a win-back answer")
        }
        return listed.offers
    }

    /// Buys a win-back offer `winBackOffers()` listed, on its product. Only the store decides
    /// whether this customer may take it (`refused` with the store's `ineligibleForOffer`
    /// otherwise, nothing charged); the purchase then goes the way of every other one.
    public func purchase(winBackOffer: WinBackOffer) async throws -> Outcome {
        try await purchase(productId: winBackOffer.productId, winBackOfferId: winBackOffer.offerId)
    }

    /// Buys `productId` with its win-back offer `winBackOfferId`.
    public func purchase(productId: String, winBackOfferId: String) async throws -> Outcome {
        try await purchase(productId: productId, offer: .winBack(offerId: winBackOfferId))
    }

    func subscriberPath(_ tail: String) -> String {
        "/v1/subscribers/\(appUserId.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? "")/\(tail)"
    }

    /// The server's signature of a promotional offer for this user (docs/OFFERS.md).
    public func signedOffer(productId: String, offerId: String) async throws -> SignedPromotionalOffer {
        let body = try JSONEncoder().encode(PromotionalOfferRequest(productId: productId, offerId: offerId))
        let answer = try await call("POST", subscriberPath("offers/promotional"), body: body)
        guard answer.status == 200 else { throw refusal(answer) }
        guard let signed = try? WireJSON.makeDecoder().decode(PromotionalOfferSignature.self, from: answer.body), signed.offerId == offerId,
            let nonce = UUID(uuidString: signed.v1.nonce)
        else {
            throw StorekeeperKitError(.forgedAnswer, "not a signed offer")
        }
        return SignedPromotionalOffer(
            offerId: signed.offerId, jws: signed.jws, keyIdentifier: signed.v1.keyIdentifier, nonce: nonce,
            timestamp: signed.v1.timestamp, signature: signed.v1.signature)
    }

    /// Buys `productId`, a subscription sold with a 12-month commitment, on the billing plan
    /// the user chose (`refused` with `billing_plan_unsupported` before iOS 26.4 and macOS 26.4,
    /// and with the store's `invalidBillingPlan` for a product that offers no such plan).
    public func purchase(productId: String, billingPlan: BillingPlan) async throws -> Outcome {
        try await purchase(productId: productId, offer: nil, billingPlan: billingPlan)
    }

    private func purchase(productId: String, offer: StoreOffer?, billingPlan: BillingPlan? = nil) async throws -> Outcome {
        let token = appAccountToken
        let started = now()
        let user = appUserId
        try journal.update { $0.append(.init(productId: productId, appAccountToken: token, startedAt: started, appUserId: user)) }
        let result: StorePurchaseResult
        do {
            result = try await store.purchase(productId: productId, appAccountToken: token, offer: offer, billingPlan: billingPlan)
        } catch {
            // Nothing was charged that the journal could name (an unknown product, a failed
            // sheet): the intent goes; a charge that did happen reaches `unfinished` or updates.
            try journal.update { entries in entries.removeAll { $0.transaction == nil && $0.startedAt == started && $0.productId == productId } }
            throw error
        }
        switch result {
        case .cancelled:
            try journal.update { entries in entries.removeAll { $0.transaction == nil && $0.startedAt == started && $0.productId == productId } }
            return .cancelled
        case .pending:
            // Ask to Buy: the transaction comes through the store's updates, journaled then.
            try journal.update { entries in entries.removeAll { $0.transaction == nil && $0.startedAt == started && $0.productId == productId } }
            return .pending(.awaitingApproval)
        case .purchased(let transaction):
            try journal.update { entries in
                if let index = entries.firstIndex(where: { $0.transaction == nil && $0.startedAt == started && $0.productId == productId }) {
                    entries[index].transaction = transaction
                } else {
                    entries.append(.init(productId: productId, appAccountToken: token, startedAt: started, transaction: transaction, appUserId: user))
                }
            }
            return try await deliver(transaction)
        }
    }

    /// At launch and on transaction updates: every transaction the store has unfinished and
    /// every one in the journal is sent to the server, once each.
    public func deliverPending() async throws -> [String: Outcome] {
        var transactions: [String: (StoreTransaction, String?)] = [:]
        for transaction in try await store.unfinished() where !identity.refused(transaction.id, for: appUserId) {
            transactions[transaction.id] = (transaction, nil)
        }
        for entry in journal.entries() { if let transaction = entry.transaction { transactions[transaction.id] = (transaction, entry.appUserId) } }
        var outcomes: [String: Outcome] = [:]
        for (id, (transaction, user)) in transactions.sorted(by: { $0.key < $1.key }) {
            outcomes[id] = try await deliver(transaction, journaledFor: user)
        }
        return outcomes
    }

    /// `deliverPending` again and again, waiting `baseDelay`, then twice as long each time (at
    /// most `maximumDelay`), until nothing is pending or `attempts` ran out.
    public func deliverPendingWithBackoff(
        attempts: Int = 8, baseDelay: Duration = .seconds(2), maximumDelay: Duration = .seconds(300)
    )
        async throws -> [String: Outcome]
    {
        var delay = baseDelay
        var outcomes: [String: Outcome] = [:]
        for attempt in 0..<max(1, attempts) {
            outcomes = try await deliverPending()
            let waiting = outcomes.values.contains { if case .pending = $0 { true } else { false } }
            guard waiting, attempt + 1 < attempts else { break }
            try await Task.sleep(for: delay)
            delay = min(delay * 2, maximumDelay)
        }
        return outcomes
    }

    /// Restore, only on the user's request: the store is brought up to date (it may ask the
    /// user to sign in), everything it says the user owns is sent to the server (a purchase
    /// the server already granted is answered as granted again and not counted twice), then
    /// the entitlements are read afresh.
    public func restore() async throws -> (outcomes: [String: Outcome], entitlements: Entitlements) {
        var outcomes: [String: Outcome] = [:]
        for transaction in try await store.restorable().sorted(by: { $0.id < $1.id }) {
            outcomes[transaction.id] = try await deliver(transaction)
        }
        return (outcomes, try await entitlements(refresh: true))
    }

    /// Runs until the calling task is cancelled (start it at launch, next to `deliverPending`):
    /// each transaction the store hands over while the app runs is journaled, then sent like
    /// a purchase, with backoff while the server cannot answer; one still pending after
    /// `attempts` stays in the journal for the next launch. `report` hears every outcome.
    public func listenForUpdates(
        attempts: Int = 8, baseDelay: Duration = .seconds(2), maximumDelay: Duration = .seconds(300),
        report: @escaping @Sendable (StoreTransaction, Outcome) async -> Void = { _, _ in }
    ) async {
        for await transaction in store.updates() {
            do {
                try journal.update { entries in
                    guard !entries.contains(where: { $0.transaction?.id == transaction.id }) else { return }
                    entries.append(
                        .init(
                            productId: transaction.productId, appAccountToken: appAccountToken, startedAt: now(), transaction: transaction,
                            appUserId: appUserId))
                }
                var delay = baseDelay
                for attempt in 0..<max(1, attempts) {
                    let outcome = try await deliver(transaction)
                    await report(transaction, outcome)
                    guard case .pending = outcome, attempt + 1 < attempts else { break }
                    try await Task.sleep(for: delay)
                    delay = min(delay * 2, maximumDelay)
                }
            } catch {
                if Task.isCancelled { return }
                await report(transaction, .pending(.other("\(error)")))
            }
        }
    }

    /// Posts one transaction; finishes it only when the server's verified answer says granted.
    /// One journaled for another user (signed out since) waits for them, unless it was this
    /// user's anonymous id before `logIn` linked it.
    func deliver(_ transaction: StoreTransaction, journaledFor user: String? = nil) async throws -> Outcome {
        if let user, user != appUserId, !identity.linked.contains(user) { return .pending(.anotherUser) }
        // The server refuses a transaction bought with another user's token.
        let body = try JSONEncoder().encode(
            SignedTransactionSubmission(
                appUserId: appUserId, signedTransaction: transaction.signedTransaction,
                appAccountToken: appAccountToken.uuidString.lowercased()))
        let answer: ServerAnswer
        do {
            answer = try await call("POST", "/v1/transactions?wait=\(configuration.waitSeconds)", body: body)
        } catch let error as StorekeeperKitError where error.code == .serverUnavailable || error.code == .forgedAnswer {
            return .pending(error.code == .serverUnavailable ? .serverUnavailable : .forgedAnswer)
        }
        switch answer.status {
        case 200:
            return try await settle(transaction, answer: answer)
        case 202, 408:
            return .pending(.verifying(state: "server_\(answer.status)"))
        default:
            let refusal = refusal(answer)
            return try await refused(transaction, RefusalCode(serverCode: refusal.serverCode ?? refusal.code.rawValue), refusal.message)
        }
    }

    /// A final answer to a post: finished only when the signed answer grants *this*
    /// transaction to *this* user (granted now, granted before, or refunded while owned);
    /// another account's hold on it is reported and leaves it unfinished.
    private func settle(_ transaction: StoreTransaction, answer: ServerAnswer) async throws -> Outcome {
        let verification = try WireJSON.makeDecoder().decode(Verification.self, from: answer.body)
        guard verification.appUserId.utf8.elementsEqual(appUserId.utf8) else { return .pending(.forgedAnswer) }
        switch verification.state {
        case .verified: break
        case .invalid: return try await refused(transaction, .invalid(reason: verification.reason), "the server found the transaction invalid")
        default: return .pending(.verifying(state: verification.state.rawValue))
        }
        let grant = verification.grant
        if grant?.conflicts.contains(where: { $0.transactionId == transaction.id }) == true {
            return .ownedByAnotherAccount(message: "transaction \(transaction.id) is granted to another account of this app")
        }
        let mine = (grant?.granted ?? []) + (grant?.alreadyGranted ?? []) + (grant?.revoked ?? [])
        guard mine.contains(transaction.id) else { return .pending(.notGranted) }
        try await store.finish(transaction)
        try forget(transaction)
        let entitlements = (try? await entitlements(refresh: true)) ?? cachedOrEmpty()
        return .granted(entitlements)
    }

    /// Each verified change of what the user owns, as it happens: after a purchase or a
    /// delivered transaction the server granted, a restore, a refresh. Starts with the last one
    /// this instance verified, if any. Ends when the caller stops iterating; one stream per view
    /// that shows access, as many as wanted.
    public nonisolated func entitlementUpdates() -> AsyncStream<Entitlements> { updates.stream() }

    /// What the user owns: from the server (answer verified), cached for offline use; the
    /// cache when the server cannot be reached, is overloaded (429, 5xx) or the answer fails
    /// its check, while it is younger than `entitlementStaleness`.
    public func entitlements(refresh: Bool = true) async throws -> Entitlements {
        if !refresh, let cached = fresh() { return cached }
        do {
            let exchange = try await exchange("GET", subscriberTarget, body: nil)
            guard exchange.answer.status == 200 else { throw refusal(exchange.answer) }
            let verifiedAt = exchange.signedAt ?? now()
            let entitlements = try Self.entitlements(exchange.answer.body, user: appUserId, verifiedAt: verifiedAt)
            try cache.save(
                EntitlementCache.Stored(
                    nonce: exchange.nonce, method: "GET", target: subscriberTarget, status: exchange.answer.status,
                    signature: exchange.answer.headers["storekeeper-signature"], body: exchange.answer.body, verifiedAt: verifiedAt))
            if let signedAt = exchange.signedAt { newestAnswers.record(signedAt, for: newestAnswerKey) }
            updates.publish(entitlements)
            return entitlements
        } catch let error as StorekeeperKitError where error.code == .serverUnavailable || error.code == .forgedAnswer {
            if let cached = fresh() { return cached }
            throw error
        }
    }

    /// Whose newest answer: this server's and this user's, hashed (the Keychain need not hold the id).
    private var newestAnswerKey: String {
        SHA256.hash(data: Data("\(configuration.serverURL.absoluteString)\n\(appUserId)".utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private var subscriberTarget: String {
        "/v1/subscribers/" + (appUserId.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? appUserId)
    }

    private static func entitlements(_ body: Data, user: String, verifiedAt: Date) throws -> Entitlements {
        guard let view = try? WireJSON.makeDecoder().decode(Subscriber.self, from: body) else {
            throw StorekeeperKitError(.forgedAnswer, "not a subscriber answer")
        }
        guard view.appUserId.utf8.elementsEqual(user.utf8) else { throw StorekeeperKitError(.forgedAnswer, "another user's entitlements") }
        return Entitlements(
            appUserId: view.appUserId, activeEntitlements: view.activeEntitlements, creditBalance: view.creditBalance, verifiedAt: verifiedAt,
            entitlements: view.entitlements.mapValues(EntitlementInfo.init))
    }

    /// The cached entitlements, if younger than the staleness limit.
    public func cachedEntitlements() -> Entitlements? { fresh() }

    /// The cached answer, checked again: signed by a pinned key for this user's path, not older
    /// than the newest answer seen for this user (a restored copy would undo a refund seen
    /// since: discarded), not signed ahead of this device's clock (set back, it would stretch the
    /// offline window: not shown until the clock is right), and younger than the staleness limit
    /// by the server's signed time. A file that fails its signature is discarded.
    private func fresh() -> Entitlements? {
        guard let stored = cache.load() else { return nil }
        let answer = ServerAnswer(status: stored.status, headers: ["storekeeper-signature": stored.signature ?? ""], body: stored.body)
        // Its age counts from the server's signed time when keys are pinned (the file's own
        // `verifiedAt` can be edited).
        var signedAt = stored.verifiedAt
        if !configuration.signingKeys.isEmpty {
            guard stored.method == "GET", stored.target == subscriberTarget, stored.status == 200,
                let verified = try? check.verifySignature(
                    answer, nonce: stored.nonce, method: stored.method, target: stored.target, requestDigest: AnswerCheck.digest(nil))
            else {
                cache.discard()
                return nil
            }
            if let newest = newestAnswers.newest(for: newestAnswerKey), verified < newest {
                cache.discard()
                return nil
            }
            if check.isAhead(verified, of: now()) { return nil }
            signedAt = verified
        }
        guard let entitlements = try? Self.entitlements(stored.body, user: appUserId, verifiedAt: signedAt) else {
            cache.discard()
            return nil
        }
        guard now().timeIntervalSince(signedAt) <= configuration.entitlementStaleness else { return nil }
        return entitlements
    }

    private func cachedOrEmpty() -> Entitlements {
        fresh() ?? Entitlements(appUserId: appUserId, activeEntitlements: [], creditBalance: nil, verifiedAt: now())
    }

    /// A final refusal: out of the journal, remembered so the store's unfinished copy is not
    /// sent again at every launch for this user, and finished when no one can ever be granted it.
    private func refused(_ transaction: StoreTransaction, _ code: RefusalCode, _ message: String) async throws -> Outcome {
        try forget(transaction)
        if code.isAboutTheTransaction {
            try await store.finish(transaction)
        } else {
            try identity.remember(refused: transaction.id, for: appUserId, in: configuration.stateDirectory)
        }
        return .refused(code: code, message: message)
    }

    private func forget(_ transaction: StoreTransaction) throws {
        try journal.update { entries in entries.removeAll { $0.transaction?.id == transaction.id } }
    }

    static let unreserved = CharacterSet(charactersIn: "-._~").union(.alphanumerics)

    /// One request with the client key, the user token and a fresh nonce; a 2xx answer must
    /// carry a valid signature when keys are pinned.
    func call(_ method: String, _ target: String, body: Data?) async throws -> ServerAnswer {
        try await exchange(method, target, body: body).answer
    }

    /// A call and the nonce it sent (an answer kept for later is checked against it). 429,
    /// 503 and other 5xx mean the server cannot serve now: `serverUnavailable`, with its
    /// `Retry-After` honoured before the next call.
    func exchange(_ method: String, _ target: String, body: Data?) async throws -> (answer: ServerAnswer, nonce: String, signedAt: Date?) {
        if let retryNotBefore, now() < retryNotBefore {
            throw StorekeeperKitError(.serverUnavailable, "the server asked to wait until \(retryNotBefore)")
        }
        guard let url = URL(string: configuration.serverURL.absoluteString.trimmingCharacters(in: ["/"]) + target) else {
            throw StorekeeperKitError(.serverUnavailable, "bad server URL")
        }
        let limit = configuration.requestTimeout ?? configuration.waitSeconds + 20
        var request = URLRequest(url: url, timeoutInterval: limit)
        request.httpMethod = method
        request.setValue("Bearer \(configuration.clientKey)", forHTTPHeaderField: "Authorization")
        let nonce = AnswerCheck.nonce()
        request.setValue(nonce, forHTTPHeaderField: "Storekeeper-Nonce")
        if let provider = userToken { request.setValue(try await provider(), forHTTPHeaderField: "Storekeeper-User-Token") }
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let answer: ServerAnswer
        do {
            answer = try await withDeadline(seconds: limit) { [transport, request] in try await transport.send(request) }
        } catch {
            throw StorekeeperKitError(.serverUnavailable, "\(error)")
        }
        if answer.status == 429 || (500..<600).contains(answer.status) {
            if let seconds = answer.headers["retry-after"].flatMap({ Int($0.trimmingCharacters(in: .whitespaces)) }), seconds > 0 {
                retryNotBefore = now().addingTimeInterval(TimeInterval(min(seconds, 3_600)))
            }
            throw StorekeeperKitError(.serverUnavailable, "the server answered \(answer.status)")
        }
        var signedAt: Date?
        if (200..<300).contains(answer.status), !configuration.signingKeys.isEmpty {
            signedAt = try check.verify(answer, nonce: nonce, method: method, target: target, requestBody: body)
        }
        return (answer, nonce, signedAt)
    }

    /// `work`'s answer, or `URLError(.timedOut)` once `seconds` passed (the work is then
    /// cancelled: a URLSession request ends with it).
    private func withDeadline(seconds: TimeInterval, _ work: @escaping @Sendable () async throws -> ServerAnswer) async throws -> ServerAnswer {
        try await withThrowingTaskGroup(of: ServerAnswer?.self) { group in
            group.addTask { try await work() }
            group.addTask {
                try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let answer = first else { throw URLError(.timedOut) }
            return answer
        }
    }

    func refusal(_ answer: ServerAnswer) -> StorekeeperKitError {
        let error = try? JSONDecoder().decode(ErrorBody.self, from: answer.body).error
        let code = error?.code.rawValue ?? "http_\(answer.status)"
        return StorekeeperKitError(.refused, "\(code): \(error?.message ?? "")", serverCode: code)
    }
}
