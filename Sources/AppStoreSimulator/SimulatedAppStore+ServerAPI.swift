import AppStoreModels
import Foundation
import JWTKit
import Synchronization

/// The claims the simulator reads from a Server API bearer token (its own reading, not the
/// server's code, so one bug cannot pass its own test).
struct SimulatorTokenClaims: JWTPayload {
    var iss: String
    /// Apple's documentation lists it, but Apple accepts tokens without it, and its own
    /// library sends none.
    var iat: Int64?
    var exp: Int64
    var aud: String
    var bid: String
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Server API faults on demand (`PUT /sim/server-api/faults`), counted down as used.
public struct ServerAPIFaults: Codable, Sendable, Equatable {
    /// Answer the next N calls 429 with a Retry-After `retryAfterMs` ahead (UNIX ms, as Apple).
    public var rateLimitNext: Int = 0
    public var retryAfterMs: Int = 200
    /// Answer the next N calls 500 with Apple's retryable internal error.
    public var failNext: Int = 0
    /// While true, every call answers 503 (the Server API is down).
    public var down: Bool = false
    /// While true, Send Consumption Information v2 answers 404 with no body, as a server that
    /// predates it would (v1 still answers).
    public var consumptionV2Missing: Bool = false

    public init() {}

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rateLimitNext = max(0, try c.decodeIfPresent(Int.self, forKey: .rateLimitNext) ?? 0)
        retryAfterMs = max(0, try c.decodeIfPresent(Int.self, forKey: .retryAfterMs) ?? 200)
        failNext = max(0, try c.decodeIfPresent(Int.self, forKey: .failNext) ?? 0)
        down = try c.decodeIfPresent(Bool.self, forKey: .down) ?? false
        consumptionV2Missing = try c.decodeIfPresent(Bool.self, forKey: .consumptionV2Missing) ?? false
    }
}

/// Apple's published request limits enforced (`PUT /sim/server-api/rate-limits`; off until
/// set): per app, endpoint and environment, at most `scale` × the published requests per second
/// (a tenth in the sandbox) × `windowSeconds` calls in each window of `windowSeconds` (Apple
/// counts over an hour; a short window shows throttling within a benchmark). Over it: 429 with
/// Apple's error and a `Retry-After` at the window's end, in UNIX milliseconds. Windows follow the
/// wall clock, not the simulated date: a limit is on the rate of real requests.
public struct ServerAPIRateLimits: Codable, Sendable, Equatable {
    public var scale: Double
    public var windowSeconds: Double

    public init(scale: Double = 1, windowSeconds: Double = 3_600) {
        self.scale = scale
        self.windowSeconds = windowSeconds
    }

    /// Calls allowed in one window.
    func allowance(_ endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment) -> Int {
        max(1, Int((endpoint.requestsPerSecond(in: environment) * scale * windowSeconds).rounded(.down)))
    }
}

/// What one Server API call answers.
struct ServerAPIAnswer: Sendable {
    var status: Int
    var body: Data
    var retryAfter: String?

    static func json(_ value: some Encodable, status: Int = 200) -> ServerAPIAnswer {
        ServerAPIAnswer(status: status, body: (try? JSONEncoder().encode(value)) ?? Data("{}".utf8))
    }

    static func error(_ status: Int, _ code: Int, _ message: String) -> ServerAPIAnswer {
        json(ServerAPIErrorBody(errorCode: code, errorMessage: message), status: status)
    }

    static let unauthorized = ServerAPIAnswer(status: 401, body: Data("Unauthenticated\n".utf8))
    static let transactionNotFound = error(404, ServerAPIErrorBody.transactionIdNotFound, "Transaction id not found.")
}

/// Server API state that is not the store's: verified tokens, faults, consumption answers.
final class ServerAPIState: Sendable {
    let verifiedTokens = Mutex<[String: (bundleId: String, expires: Int64)]>([:])
    let faults = Mutex(ServerAPIFaults())
    let rateLimits = Mutex<ServerAPIRateLimits?>(nil)
    /// Calls counted in the current window, by app, endpoint and environment.
    let windows = Mutex<[String: (window: Int64, count: Int)]>([:])
    let consumption = Mutex<[String: ConsumptionRequest]>([:])
    let consumptionV2 = Mutex<[String: ConsumptionRequestV2]>([:])
    /// Transactions a server said it finished (Finish Transaction).
    let finished = Mutex<Set<String>>([])
    /// Mass extensions by request identifier: Apple runs one once per identifier.
    let massExtensions = Mutex<[String: MassExtendRenewalDateStatusResponse]>([:])
}

extension SimulatedAppStore {
    /// Checks a bearer token as Apple accepts it: ES256, `typ` JWT, a known `kid` whose issuer
    /// is `iss`, audience `appstoreconnect-v1`, `bid` a known app, not expired, expiring within
    /// an hour, and, when it has an `iat`, not issued in the future and living at most an hour.
    /// Returns the app it speaks for.
    ///
    /// Time is judged twice: at the simulator's clock (`now`), which a test may have moved
    /// forward and which callers in the same process share, and at the wall clock, which
    /// outside callers (Apple's library, a server in another process) mint with. A token good
    /// at either is good.
    func authorize(_ authorization: String?, now: Date) async -> SimulatedApp? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return nil }
        let token = String(authorization.dropFirst("Bearer ".count))
        let instants = [Int64(now.timeIntervalSince1970), Int64(Date().timeIntervalSince1970)]
        if let known = serverAPI.verifiedTokens.withLock({ $0[token] }) {
            return instants.contains { known.expires > $0 } ? await state.app(known.bundleId) : nil
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = Self.base64URL(parts[0]),
            let header = try? JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            header["alg"] as? String == "ES256", header["typ"] as? String == "JWT", let kid = header["kid"] as? String,
            let claimsData = Self.base64URL(parts[1]),
            let claims = try? JSONDecoder().decode(SimulatorTokenClaims.self, from: claimsData),
            let app = await state.app(claims.bid),
            let key = app.serverAPIKeys?.first(where: { $0.keyId == kid && $0.issuerId == claims.iss }),
            let publicKey = try? ES256PublicKey(pem: key.publicKeyPEM)
        else { return nil }
        let keys = await JWTKeyCollection().add(ecdsa: publicKey, kid: JWKIdentifier(string: kid))
        func timely(at seconds: Int64) -> Bool {
            guard claims.exp > seconds, claims.exp <= seconds + 3600 + 60 else { return false }
            guard let iat = claims.iat else { return true }
            return iat <= seconds + 60 && claims.exp - iat <= 3600
        }
        guard (try? await keys.verify(token, as: SimulatorTokenClaims.self)) != nil, claims.aud == "appstoreconnect-v1",
            instants.contains(where: timely)
        else { return nil }
        serverAPI.verifiedTokens.withLock { tokens in
            if tokens.count > 10_000 { tokens.removeAll() }
            tokens[token] = (app.bundleId, claims.exp)
        }
        stats.record("serverapi.token.accepted")
        return app
    }

    static func base64URL(_ text: Substring) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        return Data(base64Encoded: base64)
    }

    /// The 429 this call gets when the app has used its allowance for the window, if any.
    func overRateLimit(
        app: SimulatedApp, _ endpoint: ServerAPIEndpoint, environment: AppStoreEnvironment, now: Date = Date()
    ) -> ServerAPIAnswer? {
        guard let limits = serverAPI.rateLimits.withLock({ $0 }), limits.windowSeconds > 0, limits.scale > 0 else { return nil }
        let windowMs = max(1, Int64(limits.windowSeconds * 1000))
        let nowMs = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let window = nowMs / windowMs
        let key = "\(app.bundleId)|\(environment.storageName)|\(endpoint.rawValue)"
        let allowed = serverAPI.windows.withLock { windows in
            var entry = windows[key] ?? (window, 0)
            if entry.window != window { entry = (window, 0) }
            entry.count += 1
            windows[key] = entry
            return entry.count <= limits.allowance(endpoint, environment: environment)
        }
        guard !allowed else { return nil }
        stats.record("serverapi.rate_limited")
        var answer = ServerAPIAnswer.error(429, ServerAPIErrorBody.rateLimitExceeded, "Rate limit exceeded.")
        answer.retryAfter = String((window + 1) * windowMs)
        return answer
    }

    /// A fault due for this call, if any.
    func serverAPIFault(now: Date) -> ServerAPIAnswer? {
        serverAPI.faults.withLock { faults in
            if faults.down { return ServerAPIAnswer(status: 503, body: Data("Service Unavailable".utf8)) }
            if faults.rateLimitNext > 0 {
                faults.rateLimitNext -= 1
                var answer = ServerAPIAnswer.error(429, ServerAPIErrorBody.rateLimitExceeded, "Rate limit exceeded.")
                answer.retryAfter = String(Int64(now.timeIntervalSince1970 * 1000) + Int64(faults.retryAfterMs))
                return answer
            }
            if faults.failNext > 0 {
                faults.failNext -= 1
                return .error(500, 5_000_001, "An unknown retryable error occurred.")
            }
            return nil
        }
    }

    /// A transaction of `app` sold in `environment`, or nil (Apple: 4040010).
    private func placed(_ transactionId: String, app: SimulatedApp, environment: AppStoreEnvironment) async -> SimulatorState.Transaction? {
        guard let tx = await state.transaction(transactionId), let device = await state.device(tx.deviceId),
            device.bundleId == app.bundleId, device.environment == environment
        else { return nil }
        return tx
    }

    /// The customer an `anyTransactionId` names in this app and environment: the device that
    /// holds the transaction, or whose app transaction id it is.
    private func customer(_ anyId: String, app: SimulatedApp, environment: AppStoreEnvironment) async -> SimulatorState.Device? {
        if let tx = await placed(anyId, app: app, environment: environment) { return await state.device(tx.deviceId) }
        guard let device = await state.device(appTransactionId: anyId), device.bundleId == app.bundleId, device.environment == environment
        else { return nil }
        return device
    }

    /// Why an endpoint that takes one transaction found none: `id` is the customer's app
    /// transaction id, which such endpoints refuse (4000048), or Apple knows no such id (4040010).
    private func notATransaction(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment) async -> ServerAPIAnswer {
        guard let device = await state.device(appTransactionId: id), device.bundleId == app.bundleId, device.environment == environment
        else { return .transactionNotFound }
        return ServerAPIRejection.appTransactionIdNotSupported.answer
    }

    /// Get App Transaction Info: by any transaction id of the customer, or the app transaction
    /// id itself.
    func appTransactionInfo(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        await state.advance(to: now)
        guard let device = await customer(id, app: app, environment: environment) else { return .transactionNotFound }
        return .json(AppTransactionInfoResponse(signedAppTransactionInfo: try await signedAppTransaction(device, app: app, now: now)))
    }

    /// The device's app transaction, signed: what Get App Transaction Info answers and what a
    /// RESCIND_CONSENT notification carries.
    func signedAppTransaction(_ device: SimulatorState.Device, app: SimulatedApp, now: Date) async throws -> String {
        func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        let firstPurchase = await state.deviceTransactions(device.id).map(\.originalPurchaseDate).min() ?? now
        var payload: [String: Any] = [
            "receiptType": device.environment == .production ? "Production" : "Sandbox",
            "bundleId": device.bundleId,
            "applicationVersion": "1",
            "versionExternalIdentifier": 0,
            "receiptCreationDate": ms(now),
            "originalPurchaseDate": ms(firstPurchase),
            "originalApplicationVersion": device.originalApplicationVersion,
            "appTransactionId": device.appTransactionId,
            "originalPlatform": "iOS",
        ]
        if let appAppleId = app.appAppleId { payload["appAppleId"] = appAppleId }
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try pki.signJWS(payload: Array(json))
    }

    /// Set App Account Token: a valid UUID for an original transaction of this app and
    /// environment, not one obtained through Family Sharing; Apple answers 200 with no body.
    func setAppAccountToken(
        _ originalId: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(originalId)
        guard let request = try? JSONDecoder().decode(UpdateAppAccountTokenRequest.self, from: body), let token = request.appAccountToken,
            UUID(uuidString: token) != nil
        else { return .error(400, 4_000_183, "Invalid appAccountToken UUID.") }
        guard let tx = await placed(originalId, app: app, environment: environment) else {
            let answer = await notATransaction(originalId, app: app, environment: environment)
            return answer.status == 404 ? .error(404, ServerAPIErrorBody.originalTransactionIdNotFound, "Original transaction id not found.") : answer
        }
        guard tx.originalTransactionId == originalId else {
            return .error(400, 4_000_187, "The transaction id is not an original transaction id.")
        }
        guard tx.ownership != "FAMILY_SHARED" else {
            return .error(400, 4_000_185, "Family Sharing transactions are not supported by this endpoint.")
        }
        await state.setAppAccountToken(originalTransactionId: originalId, token: token.lowercased(), now: now)
        return ServerAPIAnswer(status: 200, body: Data())
    }

    func transactionInfo(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        await state.advance(to: now)
        guard let tx = await placed(id, app: app, environment: environment) else {
            return await notATransaction(id, app: app, environment: environment)
        }
        return .json(TransactionInfoResponse(signedTransactionInfo: try await signedTransaction(tx, now: now)))
    }

    /// Get Transaction History (version 2): the customer's transactions that match every filter,
    /// sorted by when each last changed, in pages of 20 (configurable); the revision is where
    /// the next page starts.
    func history(
        _ id: String, query: ServerAPIQuery, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        let request = try TransactionHistoryQuery(query)
        await state.advance(to: now)
        guard let device = await customer(id, app: app, environment: environment) else { return .transactionNotFound }
        let products = Dictionary(app.products.map { ($0.productId, $0) }, uniquingKeysWith: { first, _ in first })
        let matching = await state.deviceTransactions(device.id).filter { request.includes($0, product: products[$0.productId]) }
        let all = request.sorted(matching)
        guard request.offset <= all.count else { throw ServerAPIRejection.invalidRevision }
        let page = all[request.offset..<min(all.count, request.offset + configuration.serverAPIPageSize)]
        var signed: [String] = []
        for tx in page { signed.append(try await signedTransaction(tx, now: now)) }
        let next = request.offset + page.count
        return .json(
            HistoryResponse(
                revision: "rev-\(next)", hasMore: next < all.count, bundleId: app.bundleId, appAppleId: app.appAppleId,
                environment: environment, signedTransactions: signed))
    }

    /// Get All Subscription Statuses: the latest transaction and renewal info of each of the
    /// customer's subscriptions, by group, keeping those whose status the query asks for.
    func subscriptionStatuses(
        _ id: String, query: ServerAPIQuery, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        let wanted = try SubscriptionStatusFilter(query)
        await state.advance(to: now)
        guard let device = await customer(id, app: app, environment: environment) else { return .transactionNotFound }
        let all = await state.deviceTransactions(device.id)
        var groups: [String: [StatusResponse.LastTransaction]] = [:]
        for originalId in Set(all.filter { $0.kind == .autoRenewable }.map(\.originalTransactionId)).sorted() {
            guard let sub = await state.subscription(originalId), let latest = await state.transaction(sub.latestTransactionId) else { continue }
            let status = await subscriptionStatus(sub, now: now)
            guard wanted.includes(status) else { continue }
            let group = app.products.first { $0.productId == sub.productId }?.subscriptionGroupIdentifier ?? "default"
            groups[group, default: []].append(
                StatusResponse.LastTransaction(
                    status: status, originalTransactionId: originalId,
                    signedTransactionInfo: try await signedTransaction(latest, now: now),
                    signedRenewalInfo: try await signedRenewalInfo(sub, now: now)))
        }
        return .json(
            StatusResponse(
                environment: environment, bundleId: app.bundleId, appAppleId: app.appAppleId,
                data: groups.keys.sorted().map { StatusResponse.Group(subscriptionGroupIdentifier: $0, lastTransactions: groups[$0]) }))
    }

    /// Get Refund History: the customer's refunded transactions, oldest refund first.
    func refundHistory(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        guard let device = await customer(id, app: app, environment: environment) else { return .transactionNotFound }
        let refunded = await state.deviceTransactions(device.id).compactMap { tx in tx.cancellationDate.map { (tx, $0) } }
        var signed: [String] = []
        for (tx, _) in refunded.sorted(by: { ($0.1, $0.0.transactionId) < ($1.1, $1.0.transactionId) }) {
            signed.append(try await signedTransaction(tx, now: now))
        }
        return .json(RefundHistoryResponse(signedTransactions: signed, revision: "rev-\(signed.count)", hasMore: false))
    }

    /// The simulator's order ids are its original transaction ids. An order id is not a
    /// transaction id: whatever Apple cannot find, however it is written, is status 1.
    func lookUpOrder(_ orderId: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        guard let tx = await placed(orderId, app: app, environment: environment) else {
            return .json(OrderLookupResponse(status: 1, signedTransactions: []))
        }
        return .json(OrderLookupResponse(status: 0, signedTransactions: [try await signedTransaction(tx, now: now)]))
    }

    /// Get Notification History: the notifications of this app and environment created in
    /// `[startDate, endDate)`, narrowed by type and subtype, by customer (`transactionId`) or to
    /// those not delivered yet. The pagination token holds the offset and the request's
    /// fingerprint.
    func notificationHistory(
        body: Data, paginationToken: String?, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
        let earliest = min(now, Date()).addingTimeInterval(-NotificationHistoryQuery.retention(environment))
        let request = try NotificationHistoryQuery(body: body, earliest: earliest)
        var offset = 0
        if let paginationToken {
            let parts = paginationToken.split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[0] == "page", let start = Int(parts[1]), start >= 0 else {
                throw ServerAPIRejection.invalidPaginationToken
            }
            guard parts[2] == request.fingerprint else { throw ServerAPIRejection.paginationTokenExpired }
            offset = start
        }
        // A transaction id stands for its customer: every notification about any of their purchases.
        let ofCustomer: Set<String>?
        if let id = request.transactionId {
            guard let device = await customer(id, app: app, environment: environment) else { return .transactionNotFound }
            ofCustomer = Set(await state.deviceTransactions(device.id).map(\.transactionId))
        } else {
            ofCustomer = nil
        }
        let all = await outbox.history(bundleId: app.bundleId, environment: environment).filter { item in
            let at = Int64((item.createdAt.timeIntervalSince1970 * 1000).rounded())
            guard at >= request.startDate, at < request.endDate else { return false }
            if let type = request.notificationType, type != item.type { return false }
            if let subtype = request.notificationSubtype, subtype != item.subtype { return false }
            if let ids = ofCustomer, !ids.contains(item.transactionId ?? "") { return false }
            return !request.onlyFailures || !item.delivered
        }
        guard offset <= all.count else { throw ServerAPIRejection.invalidPaginationToken }
        let page = all[offset..<min(all.count, offset + configuration.serverAPIPageSize)]
        let next = offset + page.count
        return .json(
            NotificationHistoryResponse(
                paginationToken: next < all.count ? "page-\(next)-\(request.fingerprint)" : nil, hasMore: next < all.count,
                notificationHistory: page.map { NotificationHistoryItem(signedPayload: $0.signedPayload, sendAttempts: $0.attempts) }))
    }

    func sendTestNotification(app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        // Apple: 404 with ServerNotificationURLNotFoundError.
        guard app.notificationURL != nil else { return .error(404, 4_040_007, "No notification URL is configured for this environment.") }
        return .json(
            SendTestNotificationResponse(testNotificationToken: try await enqueueTestNotification(app: app, environment: environment, now: now)))
    }

    func testNotificationStatus(_ token: String, app: SimulatedApp) async -> ServerAPIAnswer {
        guard let item = await outbox.item(token), item.bundleId == app.bundleId else {
            return .error(404, 4_040_008, "Test notification not found.")
        }
        return .json(CheckTestNotificationResponse(signedPayload: item.signedPayload, sendAttempts: item.attempts))
    }

    func recordConsumption(_ id: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        guard await placed(id, app: app, environment: environment) != nil else {
            return await notATransaction(id, app: app, environment: environment)
        }
        guard let request = try? JSONDecoder().decode(ConsumptionRequest.self, from: body) else {
            throw ServerAPIRejection.generalBadRequest
        }
        serverAPI.consumption.withLock { $0[id] = request }
        // v1's refundPreference: 1 prefers a refund, 2 prefers none, 0 and 3 say nothing.
        let preference = [1: "GRANT_FULL", 2: "DECLINE"][request.refundPreference ?? 0]
        await state.answerRefundRequest(transactionId: id, preference: preference, consumptionPercentage: nil, now: now())
        return ServerAPIAnswer(status: 202, body: Data())
    }

    /// Send Consumption Information v2: Apple's checks of each field, then 202; what was sent
    /// is kept for `GET /sim/consumption-v2/{transactionId}`.
    func recordConsumptionV2(_ id: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) async throws -> ServerAPIAnswer {
        if serverAPI.faults.withLock({ $0.consumptionV2Missing }) { return ServerAPIAnswer(status: 404, body: Data()) }
        try ServerAPIRejection.requireTransactionId(id)
        guard await placed(id, app: app, environment: environment) != nil else {
            return await notATransaction(id, app: app, environment: environment)
        }
        guard let request = try? JSONDecoder().decode(ConsumptionRequestV2.self, from: body) else {
            return .error(400, 4_000_000, "Invalid request.")
        }
        guard request.customerConsented else { return .error(400, 4_000_035, "Invalid customer consented value.") }
        guard request.sampleContentProvided != nil else { return .error(400, 4_000_041, "Invalid sample content provided value.") }
        guard let status = request.deliveryStatus, ConsumptionRequestV2.deliveryStatuses.contains(status) else {
            return .error(400, 4_000_036, "Invalid delivery status value.")
        }
        if let share = request.consumptionPercentage, !(0...100_000).contains(share) {
            return .error(400, 4_000_000, "Invalid consumption percentage.")
        }
        if let preference = request.refundPreference, !ConsumptionRequestV2.refundPreferences.contains(preference) {
            return .error(400, 4_000_000, "Invalid refund preference.")
        }
        serverAPI.consumptionV2.withLock { $0[id] = request }
        await state.answerRefundRequest(
            transactionId: id, preference: request.refundPreference, consumptionPercentage: request.consumptionPercentage, now: now())
        return ServerAPIAnswer(status: 202, body: Data())
    }

    /// Finish Transaction: the server delivered the purchase; recorded for
    /// `GET /sim/transactions/{transactionId}/finished`. Apple answers 200 with no body.
    func finishTransaction(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(id)
        guard await placed(id, app: app, environment: environment) != nil else {
            return await notATransaction(id, app: app, environment: environment)
        }
        serverAPI.finished.withLock { _ = $0.insert(id) }
        return ServerAPIAnswer(status: 200, body: Data())
    }

    /// Extend Subscription Renewal Dates for All Active Subscribers. The simulator does the work
    /// at once and reports it complete from the first status request; a request identifier seen
    /// before is not run again (Apple's idempotency).
    func massExtendRenewalDates(body: Data, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        guard let request = try? JSONDecoder().decode(MassExtendRenewalDateRequest.self, from: body) else {
            return .error(400, 4_000_000, "Invalid request.")
        }
        guard (1...90).contains(request.extendByDays) else { return .error(400, 4_000_009, "Invalid extend by days value.") }
        guard (0...3).contains(request.extendReasonCode) else { return .error(400, 4_000_010, "Invalid extend reason code.") }
        guard UUID(uuidString: request.requestIdentifier) != nil else { return .error(400, 4_000_011, "Invalid request identifier.") }
        if serverAPI.massExtensions.withLock({ $0[request.requestIdentifier] }) == nil {
            let seconds = configuration.acceleratedSeconds(hours: Double(request.extendByDays) * 24)
            let counts = await state.extendRenewals(
                productId: request.productId, bundleId: app.bundleId, environment: environment, by: seconds, now: now)
            serverAPI.massExtensions.withLock {
                $0[request.requestIdentifier] = MassExtendRenewalDateStatusResponse(
                    requestIdentifier: request.requestIdentifier, complete: true, completeDate: Int64(now.timeIntervalSince1970 * 1000),
                    succeededCount: Int64(counts.succeeded), failedCount: Int64(counts.failed))
            }
        }
        return .json(MassExtendRenewalDateResponse(requestIdentifier: request.requestIdentifier))
    }

    func massExtensionStatus(productId: String, requestIdentifier: String) -> ServerAPIAnswer {
        guard let status = serverAPI.massExtensions.withLock({ $0[requestIdentifier] }) else {
            return .error(404, 4_040_009, "Invalid request identifier.")
        }
        return .json(status)
    }

    func extendRenewalDate(
        _ originalId: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
        try ServerAPIRejection.requireTransactionId(originalId, else: .invalidOriginalTransactionId)
        guard let request = try? JSONDecoder().decode(ExtendRenewalDateRequest.self, from: body), (1...90).contains(request.extendByDays)
        else { return .error(400, 4_000_009, "Invalid extend by days value.") }
        guard await placed(originalId, app: app, environment: environment) != nil else {
            return .error(404, ServerAPIErrorBody.originalTransactionIdNotFound, "Original transaction id not found.")
        }
        let seconds = configuration.acceleratedSeconds(hours: Double(request.extendByDays) * 24)
        let extended = try await state.extendRenewal(originalTransactionId: originalId, by: seconds, now: now)
        return .json(
            ExtendRenewalDateResponse(
                originalTransactionId: originalId, webOrderLineItemId: extended.webOrderLineItemId, success: true,
                effectiveDate: extended.expiresDate.map { Int64($0.timeIntervalSince1970 * 1000) }))
    }
}
