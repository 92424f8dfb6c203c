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

    public init() {}

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rateLimitNext = max(0, try c.decodeIfPresent(Int.self, forKey: .rateLimitNext) ?? 0)
        retryAfterMs = max(0, try c.decodeIfPresent(Int.self, forKey: .retryAfterMs) ?? 200)
        failNext = max(0, try c.decodeIfPresent(Int.self, forKey: .failNext) ?? 0)
        down = try c.decodeIfPresent(Bool.self, forKey: .down) ?? false
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
    let consumption = Mutex<[String: ConsumptionRequest]>([:])
    let consumptionV2 = Mutex<[String: ConsumptionRequestV2]>([:])
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

    /// Get App Transaction Info: by any transaction id of the customer, or the app transaction
    /// id itself.
    func appTransactionInfo(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        await state.advance(to: now)
        var device: SimulatorState.Device?
        if let tx = await placed(id, app: app, environment: environment) {
            device = await state.device(tx.deviceId)
        } else if let owner = await state.device(appTransactionId: id), owner.bundleId == app.bundleId, owner.environment == environment {
            device = owner
        }
        guard let device else { return .transactionNotFound }
        func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        let firstPurchase = await state.deviceTransactions(device.id).map(\.originalPurchaseDate).min() ?? now
        var payload: [String: Any] = [
            "receiptType": environment == .production ? "Production" : "Sandbox",
            "bundleId": device.bundleId,
            "applicationVersion": "1",
            "versionExternalIdentifier": 0,
            "receiptCreationDate": ms(now),
            "originalPurchaseDate": ms(firstPurchase),
            "originalApplicationVersion": "1",
            "appTransactionId": device.appTransactionId,
            "originalPlatform": "iOS",
        ]
        if let appAppleId = app.appAppleId { payload["appAppleId"] = appAppleId }
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return .json(AppTransactionInfoResponse(signedAppTransactionInfo: try pki.signJWS(payload: Array(json))))
    }

    /// Set App Account Token: a valid UUID for an original transaction of this app and
    /// environment, not one obtained through Family Sharing; Apple answers 200 with no body.
    func setAppAccountToken(_ originalId: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) async -> ServerAPIAnswer {
        guard let request = try? JSONDecoder().decode(UpdateAppAccountTokenRequest.self, from: body), let token = request.appAccountToken,
            UUID(uuidString: token) != nil
        else { return .error(400, 4_000_183, "Invalid appAccountToken UUID.") }
        guard let tx = await placed(originalId, app: app, environment: environment) else {
            return .error(404, 4_040_005, "Original transaction id not found.")
        }
        guard tx.originalTransactionId == originalId else {
            return .error(400, 4_000_187, "The transaction id is not an original transaction id.")
        }
        guard tx.ownership != "FAMILY_SHARED" else {
            return .error(400, 4_000_185, "Family Sharing transactions are not supported by this endpoint.")
        }
        await state.setAppAccountToken(originalTransactionId: originalId, token: token.lowercased())
        return ServerAPIAnswer(status: 200, body: Data())
    }

    func transactionInfo(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        await state.advance(to: now)
        guard let tx = await placed(id, app: app, environment: environment) else { return .transactionNotFound }
        return .json(TransactionInfoResponse(signedTransactionInfo: try await signedTransaction(tx, now: now)))
    }

    /// Pages of 20 (configurable); the revision is the next offset.
    func history(
        _ id: String, revision: String?, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
        await state.advance(to: now)
        guard await placed(id, app: app, environment: environment) != nil, let all = await state.customerTransactions(of: id) else {
            return .transactionNotFound
        }
        let offset = revision.flatMap { Int($0.dropFirst("rev-".count)) } ?? 0
        guard offset >= 0, offset <= all.count else { return .error(400, 4_000_005, "Invalid revision.") }
        let size = configuration.serverAPIPageSize
        let page = all[offset..<min(all.count, offset + size)]
        var signed: [String] = []
        for tx in page { signed.append(try await signedTransaction(tx, now: now)) }
        let next = offset + page.count
        return .json(
            HistoryResponse(
                revision: "rev-\(next)", hasMore: next < all.count, bundleId: app.bundleId, appAppleId: app.appAppleId,
                environment: environment, signedTransactions: signed))
    }

    func subscriptionStatuses(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        await state.advance(to: now)
        guard await placed(id, app: app, environment: environment) != nil, let all = await state.customerTransactions(of: id) else {
            return .transactionNotFound
        }
        var groups: [String: [StatusResponse.LastTransaction]] = [:]
        for originalId in Set(all.filter { $0.kind == .autoRenewable }.map(\.originalTransactionId)).sorted() {
            guard let sub = await state.subscription(originalId), let latest = await state.transaction(sub.latestTransactionId) else { continue }
            let group = app.products.first { $0.productId == sub.productId }?.subscriptionGroup ?? "default"
            groups[group, default: []].append(
                StatusResponse.LastTransaction(
                    status: await subscriptionStatus(sub, now: now), originalTransactionId: originalId,
                    signedTransactionInfo: try await signedTransaction(latest, now: now),
                    signedRenewalInfo: try await signedRenewalInfo(sub, now: now)))
        }
        return .json(
            StatusResponse(
                environment: environment, bundleId: app.bundleId, appAppleId: app.appAppleId,
                data: groups.keys.sorted().map { StatusResponse.Group(subscriptionGroupIdentifier: $0, lastTransactions: groups[$0]) }))
    }

    func refundHistory(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        guard await placed(id, app: app, environment: environment) != nil, let all = await state.customerTransactions(of: id) else {
            return .transactionNotFound
        }
        var signed: [String] = []
        for tx in all where tx.cancellationDate != nil { signed.append(try await signedTransaction(tx, now: now)) }
        return .json(RefundHistoryResponse(signedTransactions: signed, revision: "rev-\(signed.count)", hasMore: false))
    }

    /// The simulator's order ids are its original transaction ids.
    func lookUpOrder(_ orderId: String, app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        guard let tx = await placed(orderId, app: app, environment: environment) else {
            return .json(OrderLookupResponse(status: 1, signedTransactions: []))
        }
        return .json(OrderLookupResponse(status: 0, signedTransactions: [try await signedTransaction(tx, now: now)]))
    }

    func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String?, app: SimulatedApp, environment: AppStoreEnvironment
    ) async -> ServerAPIAnswer {
        guard request.startDate < request.endDate else { return .error(400, 4_000_012, "Invalid start date.") }
        let all = await outbox.history(bundleId: app.bundleId, environment: environment, request: request)
        let offset = paginationToken.flatMap { Int($0.dropFirst("page-".count)) } ?? 0
        guard offset >= 0, offset <= all.count else { return .error(400, 4_000_008, "Invalid pagination token.") }
        let page = all[offset..<min(all.count, offset + configuration.serverAPIPageSize)]
        let next = offset + page.count
        return .json(
            NotificationHistoryResponse(
                paginationToken: next < all.count ? "page-\(next)" : nil, hasMore: next < all.count,
                notificationHistory: page.map { NotificationHistoryItem(signedPayload: $0.signedPayload, sendAttempts: $0.attempts) }))
    }

    func sendTestNotification(app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> ServerAPIAnswer {
        guard app.notificationURL != nil else { return .error(400, 4_000_030, "No notification URL is configured.") }
        return .json(
            SendTestNotificationResponse(testNotificationToken: try await enqueueTestNotification(app: app, environment: environment, now: now)))
    }

    func testNotificationStatus(_ token: String, app: SimulatedApp) async -> ServerAPIAnswer {
        guard let item = await outbox.item(token), item.bundleId == app.bundleId else {
            return .error(404, 4_040_008, "Test notification not found.")
        }
        return .json(CheckTestNotificationResponse(signedPayload: item.signedPayload, sendAttempts: item.attempts))
    }

    func recordConsumption(_ id: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) async -> ServerAPIAnswer {
        guard await placed(id, app: app, environment: environment) != nil else { return .transactionNotFound }
        guard let request = try? JSONDecoder().decode(ConsumptionRequest.self, from: body) else {
            return .error(400, 4_000_023, "Invalid request.")
        }
        serverAPI.consumption.withLock { $0[id] = request }
        return ServerAPIAnswer(status: 202, body: Data())
    }

    /// Send Consumption Information v2: Apple's checks of each field, then 202; what was sent
    /// is kept for `GET /sim/consumption-v2/{transactionId}`.
    func recordConsumptionV2(_ id: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) async -> ServerAPIAnswer {
        guard await placed(id, app: app, environment: environment) != nil else { return .transactionNotFound }
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
        return ServerAPIAnswer(status: 202, body: Data())
    }

    func extendRenewalDate(
        _ originalId: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment, now: Date
    ) async throws -> ServerAPIAnswer {
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
