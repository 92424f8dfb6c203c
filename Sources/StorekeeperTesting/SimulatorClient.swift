import AppStoreModels
public import AppStoreSimulator
public import Foundation
import NIOHTTP1

/// Drives the simulator's `/sim` test API over HTTP, as a person testing purchases would.
public struct SimulatorClient: Sendable {
    public struct Purchase: Sendable {
        public var transactionId: String
        public var originalTransactionId: String
        public var receipt: String
        /// The StoreKit 2 signed transaction (JWS) of this purchase.
        public var signedTransaction: String
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public let http: HTTPJSONClient

    public init(http: HTTPJSONClient) { self.http = http }

    public func createDevice(bundleId: String, environment: String = "sandbox") async throws -> UUID {
        struct Body: Encodable {
            var bundleId: String
            var environment: String
        }
        let reply = try await http.send(.POST, "/sim/devices", json: Body(bundleId: bundleId, environment: environment))
        guard reply.status == 201, let id = (reply.json["deviceId"] as? String).flatMap(UUID.init(uuidString:)) else {
            throw Failure(description: "createDevice: \(reply.status) \(reply.text)")
        }
        return id
    }

    /// An offer on a subscription's first period (the simulator's `offer` body field).
    public struct Offer: Encodable, Sendable {
        public var type: Int
        public var identifier: String?
        public var discountType: String
        public var period: String?

        public init(type: Int, identifier: String? = nil, discountType: String, period: String? = nil) {
            self.type = type
            self.identifier = identifier
            self.discountType = discountType
            self.period = period
        }
    }

    public func purchase(
        device: UUID, productId: String, quantity: Int = 1, appAccountToken: String? = nil, offer: Offer? = nil
    ) async throws -> Purchase {
        struct Body: Encodable {
            var productId: String
            var quantity: Int
            var appAccountToken: String?
            var offer: Offer?
        }
        let reply = try await http.send(
            .POST, "/sim/devices/\(device.uuidString)/purchases",
            json: Body(productId: productId, quantity: quantity, appAccountToken: appAccountToken, offer: offer))
        return try purchase(from: reply, call: "purchase")
    }

    private func purchase(from reply: HTTPJSONClient.Reply, call: String) throws -> Purchase {
        guard reply.status == 201, let tx = reply.json["transaction"] as? [String: Any], let receipt = reply.json["receipt"] as? String
        else { throw Failure(description: "\(call): \(reply.status) \(reply.text)") }
        return Purchase(
            transactionId: "\(tx["transaction_id"] ?? "")", originalTransactionId: "\(tx["original_transaction_id"] ?? "")",
            receipt: receipt, signedTransaction: reply.json["signedTransaction"] as? String ?? "")
    }

    public func receipt(device: UUID) async throws -> String {
        let reply = try await http.send(.GET, "/sim/devices/\(device.uuidString)/receipt")
        guard reply.status == 200, let receipt = reply.json["receipt"] as? String else {
            throw Failure(description: "receipt: \(reply.status) \(reply.text)")
        }
        return receipt
    }

    /// Moves the simulated App Store's clock (and the in-process server's, which shares it)
    /// `seconds` forward.
    public func advanceClock(seconds: Double) async throws {
        struct Body: Encodable { var seconds: Double }
        let reply = try await http.send(.POST, "/sim/clock/advance", json: Body(seconds: seconds))
        guard reply.status == 200 else { throw Failure(description: "advanceClock: \(reply.status) \(reply.text)") }
    }

    /// The customer asks Apple for a refund (CONSUMPTION_REQUEST with `reason`); Apple decides
    /// once the developer's consumption information arrives, or after 12 hours.
    public func requestRefund(transactionId: String, reason: String = "UNINTENDED_PURCHASE") async throws {
        struct Body: Encodable { var reason: String }
        let reply = try await http.send(.POST, "/sim/transactions/\(transactionId)/refund-request", json: Body(reason: reason))
        guard reply.status == 200 else { throw Failure(description: "refund request: \(reply.status) \(reply.text)") }
    }

    /// What the developer sent Apple for `transactionId` through Send Consumption Information v2, if anything.
    public func consumptionV2(transactionId: String) async throws -> [String: Any]? {
        let reply = try await http.send(.GET, "/sim/consumption-v2/\(transactionId)")
        return reply.status == 200 ? reply.json : nil
    }

    /// A subscriber views their subscription and may cancel: Apple asks the app's realtime URL
    /// what to show. What the simulator saw: `status`, `elapsedMilliseconds`, `kind`, `answer`,
    /// `problems`, `offerAppliedToNextRenewal`, and the `signedPayload` it posted.
    public func askRetention(originalTransactionId: String, locale: String = "en_US") async throws -> [String: Any] {
        struct Body: Encodable { var locale: String }
        let reply = try await http.send(.POST, "/sim/subscriptions/\(originalTransactionId)/retention-request", json: Body(locale: locale))
        guard reply.status == 200 else { throw Failure(description: "retention request: \(reply.status) \(reply.text)") }
        return reply.json
    }

    /// Apple refunds the whole transaction (`REFUND_FULL`).
    public func refund(transactionId: String) async throws {
        try await post("/sim/transactions/\(transactionId)/refund")
    }

    /// Apple refunds `percentage` of the transaction, in milliunits of a percent (1...100000);
    /// below 100000 the signed transaction says `REFUND_PRORATED`.
    public func refund(transactionId: String, percentage: Int) async throws {
        struct Body: Encodable { var percentage: Int }
        let reply = try await http.send(.POST, "/sim/transactions/\(transactionId)/refund", json: Body(percentage: percentage))
        guard reply.status == 200 else { throw Failure(description: "refund: \(reply.status) \(reply.text)") }
    }

    /// The auto-renewable products billed monthly with a 12-month commitment from now on
    /// (replaces the simulator's `commitmentProductIds`).
    public func setCommitmentProducts(_ productIds: Set<String>) async throws {
        struct Body: Encodable { var productIds: [String] }
        let reply = try await http.send(.PUT, "/sim/commitment-products", json: Body(productIds: productIds.sorted()))
        guard reply.status == 200 else { throw Failure(description: "commitment-products: \(reply.status) \(reply.text)") }
    }

    public func cancelAutoRenew(originalTransactionId: String) async throws {
        try await post("/sim/subscriptions/\(originalTransactionId)/cancel-auto-renew")
    }

    public func failBilling(originalTransactionId: String, gracePeriod: Bool) async throws {
        struct Body: Encodable { var gracePeriod: Bool }
        let reply = try await http.send(
            .POST, "/sim/subscriptions/\(originalTransactionId)/billing-failure", json: Body(gracePeriod: gracePeriod))
        guard reply.status == 200 else { throw Failure(description: "billing-failure: \(reply.status) \(reply.text)") }
    }

    public func recoverBilling(originalTransactionId: String) async throws {
        try await post("/sim/subscriptions/\(originalTransactionId)/billing-recovery")
    }

    public func setFaults(_ faults: FaultConfiguration) async throws {
        let reply = try await http.send(.PUT, "/sim/faults", json: faults)
        guard reply.status == 200 else { throw Failure(description: "faults: \(reply.status) \(reply.text)") }
    }

    public func outage(seconds: Double) async throws {
        struct Body: Encodable { var seconds: Double }
        let reply = try await http.send(.POST, "/sim/outage", json: Body(seconds: seconds))
        guard reply.status == 200 else { throw Failure(description: "outage: \(reply.status) \(reply.text)") }
    }

    /// Every transaction the simulator sold: the reference a server's ledger is reconciled against.
    public func soldTransactions() async throws -> [[String: Any]] {
        let reply = try await http.send(.GET, "/sim/transactions")
        return (try? JSONSerialization.jsonObject(with: reply.body)) as? [[String: Any]] ?? []
    }

    public func stats() async throws -> [String: Int] {
        let reply = try await http.send(.GET, "/sim/stats")
        return (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Int] ?? [:]
    }

    /// Server API faults: the next `rateLimitNext` calls answer 429 (Retry-After `retryAfterMs`
    /// ahead), the next `failNext` answer 500, and `down` answers 503 to everything.
    public func setServerAPIFaults(rateLimitNext: Int = 0, retryAfterMs: Int = 200, failNext: Int = 0, down: Bool = false) async throws {
        struct Body: Encodable {
            var rateLimitNext: Int
            var retryAfterMs: Int
            var failNext: Int
            var down: Bool
        }
        let reply = try await http.send(
            .PUT, "/sim/server-api/faults", json: Body(rateLimitNext: rateLimitNext, retryAfterMs: retryAfterMs, failNext: failNext, down: down))
        guard reply.status == 200 else { throw Failure(description: "server-api faults: \(reply.status) \(reply.text)") }
    }

    /// Apple's published Server API limits enforced at `scale` × their rate over windows of
    /// `windowSeconds` (`scale` 0: off).
    public func setServerAPIRateLimits(scale: Double, windowSeconds: Double = 3_600) async throws {
        let reply = try await http.send(.PUT, "/sim/server-api/rate-limits", json: ServerAPIRateLimits(scale: scale, windowSeconds: windowSeconds))
        guard reply.status == 200 else { throw Failure(description: "server-api rate limits: \(reply.status) \(reply.text)") }
    }

    /// Whether Apple has told everything so far: every event made a notification and every
    /// delivery made (what a receiver answered 2xx is in its database).
    public func notificationsSettled() async throws -> Bool {
        let reply = try await http.send(.GET, "/sim/notifications/backlog")
        guard reply.status == 200, let counts = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Int] else {
            throw Failure(description: "notifications/backlog: \(reply.status) \(reply.text)")
        }
        return counts["undrained"] == 0 && counts["deliveries"] == 0
    }

    /// Notification delivery faults for the next notifications: lose, duplicate, hold back
    /// until the following one was delivered (`reorder`), or until `releaseHeldNotifications` (`hold`).
    public func setNotificationFaults(drop: Int = 0, duplicate: Int = 0, reorder: Int = 0, hold: Int = 0) async throws {
        struct Body: Encodable {
            var drop: Int
            var duplicate: Int
            var reorder: Int
            var hold: Int
        }
        let reply = try await http.send(
            .PUT, "/sim/notifications/faults", json: Body(drop: drop, duplicate: duplicate, reorder: reorder, hold: hold))
        guard reply.status == 200 else { throw Failure(description: "notification faults: \(reply.status) \(reply.text)") }
    }

    /// Sends the notifications held by a `hold` fault now; how many.
    @discardableResult
    public func releaseHeldNotifications() async throws -> Int {
        let reply = try await http.send(.POST, "/sim/notifications/release")
        guard reply.status == 200, let released = reply.json["released"] as? Int else {
            throw Failure(description: "release: \(reply.status) \(reply.text)")
        }
        return released
    }

    /// Every notification the simulator created, with `delivered` and `attempts`.
    public func notifications() async throws -> [[String: Any]] {
        let reply = try await http.send(.GET, "/sim/notifications")
        return (try? JSONSerialization.jsonObject(with: reply.body)) as? [[String: Any]] ?? []
    }

    /// Family Sharing: `member` gains access to a purchase; returns the shared transaction.
    public func shareWithFamily(transactionId: String, member: UUID) async throws -> Purchase {
        struct Body: Encodable { var transactionId: String }
        let reply = try await http.send(.POST, "/sim/devices/\(member.uuidString)/family-share", json: Body(transactionId: transactionId))
        return try purchase(from: reply, call: "family-share")
    }

    /// Apple reverses a refund (REFUND_REVERSED).
    public func reverseRefund(transactionId: String) async throws {
        try await post("/sim/transactions/\(transactionId)/reverse-refund")
    }

    /// Family Sharing stopped for a shared transaction (REVOKE).
    public func revoke(transactionId: String) async throws {
        try await post("/sim/transactions/\(transactionId)/revoke")
    }

    private func post(_ path: String) async throws {
        let reply = try await http.send(.POST, path)
        guard reply.status == 200 else { throw Failure(description: "\(path): \(reply.status) \(reply.text)") }
    }
}
