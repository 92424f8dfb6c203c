import AppStoreClient
import AppStoreModels
import AppStoreSimulator
import AsyncHTTPClient
import Crypto
import Foundation
import NIOHTTP1
import SimulatorSetup
import StorekeeperServer
import StorekeeperTesting
import Synchronization
import TestFixtures
import Testing

/// Records the client's waits instead of sleeping, so backoff is asserted, not timed.
final class SleepRecorder: Sendable {
    private let waits = Mutex<[Double]>([])
    var recorded: [Double] { waits.withLock { $0 } }
    var sleep: @Sendable (Double) async throws -> Void { { seconds in self.waits.withLock { $0.append(seconds) } } }
}

func decodeBase64URL(_ text: Substring) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}

/// The JSON payload of a compact JWS, unverified (the stack's server verifies; tests read).
func jwsPayload(_ jws: String) throws -> [String: Any] {
    let parts = jws.split(separator: ".")
    let data = try #require(parts.count == 3 ? decodeBase64URL(parts[1]) : nil)
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

@Suite("App Store Server API: models from Apple's library vectors")
struct ServerAPIModelTests {
    func model<T: Decodable>(_ name: String, as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: try TestPaths.fixture("storekit2/models/\(name).json"))
    }

    @Test("history, statuses, notification history, order lookup and errors decode with the recorded values")
    func vectors() throws {
        let history = try model("transactionHistoryResponse", as: HistoryResponse.self)
        #expect(history.revision == "revision_output" && history.hasMore == true && history.bundleId == "com.example")
        #expect(history.appAppleId == 323_232 && history.environment?.rawValue == "LocalTesting")
        #expect(history.signedTransactions == ["signed_transaction_value", "signed_transaction_value2"])

        // An unknown environment is kept as sent; a wrongly typed appAppleId is an error.
        #expect(try model("transactionHistoryResponseWithMalformedEnvironment", as: HistoryResponse.self).environment?.rawValue == "LocalTestingxxx")
        #expect(throws: DecodingError.self) { try model("transactionHistoryResponseWithMalformedAppAppleId", as: HistoryResponse.self) }

        let statuses = try model("getAllSubscriptionStatusesResponse", as: StatusResponse.self)
        #expect(statuses.appAppleId == 5_454_545 && statuses.data?.map(\.subscriptionGroupIdentifier) == ["sub_group_one", "sub_group_two"])
        let last = statuses.data?.flatMap { $0.lastTransactions ?? [] } ?? []
        #expect(last.map(\.status) == [1, 5, 2] && last.map(\.originalTransactionId) == ["3749183", "5314314134", "3413453"])
        #expect(last.first?.signedRenewalInfo == "signed_renewal_one")

        let notifications = try model("getNotificationHistoryResponse", as: NotificationHistoryResponse.self)
        #expect(notifications.paginationToken == "57715481-805a-4283-8499-1c19b5d6b20a" && notifications.hasMore == true)
        #expect(notifications.notificationHistory?.map(\.signedPayload) == ["signed_payload_one", "signed_payload_two"])
        #expect(notifications.notificationHistory?.first?.sendAttempts?.map(\.sendAttemptResult) == ["NO_RESPONSE", "SUCCESS"])
        #expect(notifications.notificationHistory?.first?.sendAttempts?.first?.attemptDate == 1_698_148_900_000)

        let order = try model("lookupOrderIdResponse", as: OrderLookupResponse.self)
        #expect(order.status == 1 && order.signedTransactions == ["signed_transaction_one", "signed_transaction_two"])
        #expect(try model("transactionInfoResponse", as: TransactionInfoResponse.self).signedTransactionInfo == "signed_transaction_info_value")

        #expect(try model("apiException", as: ServerAPIErrorBody.self).errorCode == 5_000_000)
        #expect(try model("apiTooManyRequestsException", as: ServerAPIErrorBody.self).errorCode == ServerAPIErrorBody.rateLimitExceeded)
        #expect(try model("apiUnknownError", as: ServerAPIErrorBody.self).errorCode == 9_990_000)
        #expect(try model("transactionIdNotFoundError", as: ServerAPIErrorBody.self).errorCode == ServerAPIErrorBody.transactionIdNotFound)
        #expect(try model("invalidTransactionIdError", as: ServerAPIErrorBody.self).errorCode == 4_000_006)
    }

    @Test("the bearer token: ES256, kid and typ in the header, Apple's claims, reused until near expiry")
    func token() async throws {
        let key = P256.Signing.PrivateKey()
        let credentials = ServerAPICredentials(issuerId: "issuer-1", keyId: "KEY123", bundleId: "com.example", privateKeyPEM: key.pemRepresentation)
        let provider = try ServerAPITokenProvider(credentials: credentials, lifetime: 1200, refreshMargin: 300, clockSkew: 60)
        let first = try await provider.token(now: referenceTime)
        #expect(try await provider.token(now: referenceTime.addingTimeInterval(899)) == first)
        let renewed = try await provider.token(now: referenceTime.addingTimeInterval(901))
        #expect(renewed != first)
        #expect(await provider.minted == 2)

        let parts = first.split(separator: ".")
        let headerData = try #require(decodeBase64URL(parts[0]))
        let header = try #require(try JSONSerialization.jsonObject(with: headerData) as? [String: Any])
        #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "KEY123" && header["typ"] as? String == "JWT")
        let claims = try jwsPayload(first)
        #expect(
            claims["iss"] as? String == "issuer-1" && claims["aud"] as? String == "appstoreconnect-v1" && claims["bid"] as? String == "com.example")
        let iat = try #require(claims["iat"] as? Int), exp = try #require(claims["exp"] as? Int)
        // The clock is injected (`now: referenceTime`): iat is that instant set back by the 60 s
        // skew, exp the 1200 s lifetime after it, so the claims are exact, whatever the machine does.
        let minted = Int(referenceTime.timeIntervalSince1970)
        #expect(iat == minted - 60)
        #expect(exp == minted + 1200)
        #expect(exp - iat <= 3600, "Apple refuses tokens valid for more than an hour")

        // The signature verifies with the key's public half (what Apple holds).
        let signatureData = try #require(decodeBase64URL(parts[2]))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: signatureData)
        #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))

        #expect(throws: (any Error).self) {
            _ = try ServerAPITokenProvider(credentials: ServerAPICredentials(issuerId: "i", keyId: "k", bundleId: "b", privateKeyPEM: "nope"))
        }
    }
}

@Suite("App Store Server API client against the simulator")
struct ServerAPIClientTests {
    static func withAPIStack<T>(
        pageSize: Int = 20, _ body: (LocalStack) async throws -> T
    ) async throws -> T {
        // The server's own gap-fill stays off: the simulator's counters then count this client alone.
        try await withStack(
            configure: {
                $0.apps[0].serverAPI = .generated()
                $0.notificationGapFill.enabled = false
            }, configureSimulator: { $0.serverAPIPageSize = pageSize }, body)
    }

    func client(
        _ stack: LocalStack, recorder: SleepRecorder, maximumAttempts: Int = 4, longestWait: Double = 30,
        now: @escaping @Sendable () -> Date = Date.init
    ) throws -> AppStoreServerAPIClient {
        let app = stack.configuration.apps[0]
        return AppStoreServerAPIClient(
            httpClient: stack.httpClient, endpoints: stack.configuration.serverAPIEndpoints,
            tokens: try ServerAPITokenProvider(credentials: try #require(app.serverAPICredentials)),
            policy: ServerAPIRetryPolicy(maximumAttempts: maximumAttempts, base: 0.05, cap: 0.2, longestRateLimitWait: longestWait),
            now: now, sleep: recorder.sleep)
    }

    @Test("the JWT is accepted and reused; a key Apple does not know is refused after one fresh token")
    func jwt() async throws {
        try await Self.withAPIStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let api = try client(stack, recorder: SleepRecorder())
            let (info, environment) = try await api.transactionInfo(bought.transactionId)
            #expect(environment == .production)
            let signedInfo = try #require(info.signedTransactionInfo)
            #expect(try jwsPayload(signedInfo)["transactionId"] as? String == bought.transactionId)
            _ = try await api.transactionInfo(bought.transactionId)
            #expect(await api.tokens.minted == 1)
            #expect(try await stack.simulator.stats()["serverapi.token.accepted"] == 1)

            // Same key id and issuer, another private key: a forged token.
            let app = stack.configuration.apps[0]
            var forged = try #require(app.serverAPICredentials)
            forged.privateKeyPEM = P256.Signing.PrivateKey().pemRepresentation
            let impostor = AppStoreServerAPIClient(
                httpClient: stack.httpClient, endpoints: stack.configuration.serverAPIEndpoints,
                tokens: try ServerAPITokenProvider(credentials: forged))
            let error = await #expect(throws: ServerAPIError.self) { try await impostor.transactionInfo(bought.transactionId) }
            #expect(error?.code == .unauthorized && error?.httpStatus == 401)
            #expect(await impostor.tokens.minted == 2)
            #expect(try await stack.simulator.stats()["serverapi.production.transaction_info.401"] == 2)
        }
    }

    @Test(
        "an unanswered renewal-date extension or test notification is not sent again (Apple may have applied it); an unanswered read is"
    )
    func unansweredNotResent() async throws {
        let server = try await UnansweringServer.start()
        let calls = Mutex<[String]>([])
        // Each attempt is counted as it ends (the client's own signal); the server never answers,
        // so every attempt ends in the client's timeout, however slow the machine.
        let api = AppStoreServerAPIClient(
            httpClient: HTTPClient.shared, endpoints: ServerAPIEndpoints(production: server.baseURL, sandbox: server.baseURL),
            tokens: try ServerAPITokenProvider(
                credentials: ServerAPICredentials(
                    issuerId: "issuer", keyId: "KEY", bundleId: demoBundle, privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation)),
            policy: ServerAPIRetryPolicy(maximumAttempts: 3, base: 0, cap: 0, jitter: 0, timeoutSeconds: 0.2),
            sleep: { _ in }, observer: { observation in calls.withLock { $0.append(observation.outcome) } })
        let extended = await #expect(throws: ServerAPIError.self) {
            try await api.extendRenewalDate(
                "2000000000000001", ExtendRenewalDateRequest(extendByDays: 7, extendReasonCode: 1, requestIdentifier: UUID().uuidString),
                environment: .production)
        }
        #expect(extended?.code == .unavailable && extended?.message.contains("not sent again") == true, "\(String(describing: extended))")
        #expect(calls.withLock { $0 } == ["timeout"], "one attempt, not resent")
        let test = await #expect(throws: ServerAPIError.self) { try await api.requestTestNotification(environment: .production) }
        #expect(test?.code == .unavailable)
        #expect(calls.withLock { $0 } == ["timeout", "timeout"], "one attempt, not resent")
        // A read is safe to repeat: every attempt is made.
        _ = await #expect(throws: ServerAPIError.self) { try await api.transactionInfo("2000000000000001", in: .only(.production)) }
        #expect(calls.withLock { $0 }.count == 5, "\(calls.withLock { $0 })")
        await server.stop()
    }

    @Test("transaction history is paged; every page is read, in order")
    func paging() async throws {
        try await Self.withAPIStack(pageSize: 2) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            var sold: [String] = []
            for _ in 0..<5 { sold.append(try await stack.simulator.purchase(device: device, productId: "com.example.coins100").transactionId) }
            let api = try client(stack, recorder: SleepRecorder())
            let (first, _) = try await api.transactionHistory(sold[0])
            #expect(first.signedTransactions?.count == 2 && first.hasMore == true && first.revision != nil)
            let (all, environment) = try await api.completeTransactionHistory(sold[3])
            #expect(environment == .production)
            #expect(try all.map { try jwsPayload($0)["transactionId"] as? String } == sold)
            #expect(try await stack.simulator.stats()["serverapi.production.history.200"] == 4)
        }
    }

    @Test("429 waits for Retry-After and holds the endpoint's other callers, 5xx backs off, and a long Retry-After is handed back")
    func backoff() async throws {
        try await Self.withAPIStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let recorder = SleepRecorder()
            // The recorder notes waits without sleeping, so the clock does not move past a hold:
            // each phase takes a client of its own (its own throttle).
            var api = try client(stack, recorder: recorder)

            // Retry-After 20 s ahead: far beyond any backoff (capped at 0.2 s), and far beyond the
            // time a loaded machine takes to read the answer, yet within the 30 s the client waits.
            try await stack.simulator.setServerAPIFaults(rateLimitNext: 2, retryAfterMs: 20_000)
            _ = try await api.transactionInfo(bought.transactionId)
            #expect(recorder.recorded.count == 2)
            // The property: each wait follows Retry-After (at most the 20 s announced), not the
            // backoff (at most 0.2 s).
            #expect(recorder.recorded.allSatisfy { $0 > 0.2 && $0 <= 20.01 }, "waits \(recorder.recorded)")
            // Another call to the endpoint waits for the hold too, rather than asking Apple now.
            let calls = try await stack.simulator.stats()["serverapi.production.transaction_info.200"]
            _ = try await api.transactionInfo(bought.transactionId)
            #expect(recorder.recorded.count == 3 && recorder.recorded[2] > 0.2, "waits \(recorder.recorded)")
            #expect(try await stack.simulator.stats()["serverapi.production.transaction_info.200"] == (calls ?? 0) + 1)

            api = try client(stack, recorder: recorder)
            try await stack.simulator.setServerAPIFaults(failNext: 2)
            _ = try await api.transactionInfo(bought.transactionId)
            #expect(recorder.recorded.count == 5)

            try await stack.simulator.setServerAPIFaults(rateLimitNext: 1, retryAfterMs: 120_000)
            let asked = Date()
            let limited = await #expect(throws: ServerAPIError.self) { try await api.transactionInfo(bought.transactionId) }
            #expect(limited?.code == .rateLimited && limited?.isTransient == true)
            // Apple named an instant 120 s after it answered, which was after the call began.
            #expect((limited?.retryAfter ?? .distantPast) > asked.addingTimeInterval(100), "\(String(describing: limited?.retryAfter))")
            // Until then this client does not call the endpoint at all: the same time is handed back.
            let before = try await stack.simulator.stats()
            let held = await #expect(throws: ServerAPIError.self) { try await api.transactionInfo(bought.transactionId) }
            #expect(
                held?.code == .rateLimited && held?.httpStatus == nil && held?.retryAfter ?? .distantPast >= limited?.retryAfter ?? .distantFuture)
            #expect(try await stack.simulator.stats() == before)

            api = try client(stack, recorder: recorder)
            try await stack.simulator.setServerAPIFaults(down: true)
            let down = await #expect(throws: ServerAPIError.self) { try await api.transactionInfo(bought.transactionId) }
            #expect(down?.code == .unavailable && down?.httpStatus == 503)
            #expect(recorder.recorded.count == 8)
            try await stack.simulator.setServerAPIFaults()
        }
    }

    @Test("calls are spaced to Apple's published limit for the endpoint (a tenth in the sandbox); the simulator enforces it")
    func throttle() async throws {
        try await Self.withAPIStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            // A clock that moves only when the client waits: the spacing is computed, not timed.
            let recorder = SleepRecorder()
            let start = Date()
            let api = try client(stack, recorder: recorder, now: { start.addingTimeInterval(recorder.recorded.reduce(0, +)) })
            // Get Transaction History: 50 per second in production, 5 in the sandbox; five at
            // once, then one every 0.2 s.
            for _ in 0..<8 { _ = try await api.transactionHistory(bought.transactionId, in: .only(.sandbox)) }
            #expect(recorder.recorded.count == 3, "waits \(recorder.recorded)")
            #expect(recorder.recorded.allSatisfy { abs($0 - 0.2) < 0.000_1 }, "waits \(recorder.recorded)")
            // Another endpoint has its own allowance.
            _ = try await api.transactionInfo(bought.transactionId, in: .only(.sandbox))
            #expect(recorder.recorded.count == 3)

            // The simulator's own count: one call per window allowed, the second refused with Apple's
            // error and a Retry-After at the window's end (a window longer than any run).
            try await stack.simulator.setServerAPIRateLimits(scale: 1e-9, windowSeconds: 2e8)
            let plain = try client(stack, recorder: SleepRecorder(), maximumAttempts: 1)
            _ = try await plain.subscriptionStatuses(bought.transactionId, in: .only(.sandbox))
            let refused = await #expect(throws: ServerAPIError.self) {
                try await plain.subscriptionStatuses(bought.transactionId, in: .only(.sandbox))
            }
            #expect(refused?.httpStatus == 429 && refused?.apiErrorCode == ServerAPIErrorBody.rateLimitExceeded)
            #expect((refused?.retryAfter ?? .distantPast) > Date().addingTimeInterval(3_600))
            // Per endpoint: another one still answers.
            _ = try await plain.transactionInfo(bought.transactionId, in: .only(.sandbox))
            #expect(try await stack.simulator.stats()["serverapi.rate_limited"] == 1)
            try await stack.simulator.setServerAPIRateLimits(scale: 0)
        }
    }

    @Test("a sandbox transaction is found in the sandbox after production answers 4040010; unknown ids fail in both")
    func sandboxFallback() async throws {
        try await Self.withAPIStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let api = try client(stack, recorder: SleepRecorder())
            let (info, environment) = try await api.transactionInfo(bought.transactionId)
            #expect(environment == .sandbox && info.signedTransactionInfo != nil)
            let stats = try await stack.simulator.stats()
            #expect(stats["serverapi.production.transaction_info.404"] == 1 && stats["serverapi.sandbox.transaction_info.200"] == 1)

            let missing = await #expect(throws: ServerAPIError.self) { try await api.transactionInfo("999999999") }
            #expect(missing?.apiErrorCode == ServerAPIErrorBody.transactionIdNotFound && missing?.code == .apiError)
            let only = await #expect(throws: ServerAPIError.self) { try await api.transactionInfo(bought.transactionId, in: .only(.production)) }
            #expect(only?.httpStatus == 404)
        }
    }

    @Test("statuses, refunds, order lookup, test notification, consumption and renewal extension")
    func otherEndpoints() async throws {
        try await Self.withAPIStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            try await stack.simulator.refund(transactionId: coins.transactionId)
            let api = try client(stack, recorder: SleepRecorder())

            let (statuses, _) = try await api.subscriptionStatuses(sub.transactionId)
            let last = try #require(statuses.data?.first?.lastTransactions?.first)
            #expect(last.status == 1 && last.originalTransactionId == sub.originalTransactionId)
            let renewalInfo = try #require(last.signedRenewalInfo)
            #expect(try jwsPayload(renewalInfo)["autoRenewStatus"] as? Int == 1)

            let (refunds, _) = try await api.refundHistory(sub.transactionId)
            #expect(try refunds.signedTransactions?.map { try jwsPayload($0)["transactionId"] as? String } == [coins.transactionId])

            #expect(try await api.lookUpOrder(sub.originalTransactionId).0.status == 0)
            #expect(try await api.lookUpOrder("no-such-order").0.status == 1)

            // Without a notification URL Apple refuses to send a test notification.
            let noURL = await #expect(throws: ServerAPIError.self) { try await api.requestTestNotification(environment: .production) }
            #expect(noURL?.httpStatus == 404 && noURL?.apiErrorCode == 4_040_007, "Apple's ServerNotificationURLNotFoundError")
            try await stack.sendNotifications()
            let token = try #require(try await api.requestTestNotification(environment: .production).testNotificationToken)
            let delivered = try await stack.whenSettled {
                let status = try await api.testNotificationStatus(token, environment: .production)
                return status.sendAttempts?.contains { $0.sendAttemptResult == "SUCCESS" } == true
            }
            #expect(delivered)

            try await api.sendConsumptionInformation(
                coins.transactionId, ConsumptionRequest(customerConsented: true, consumptionStatus: 3, deliveryStatus: 0), environment: .production)
            let recorded = try await stack.simulator.http.send(.GET, "/sim/consumption/\(coins.transactionId)")
            #expect(recorded.status == 200 && recorded.json["consumptionStatus"] as? Int == 3)

            let latestInfo = try #require(last.signedTransactionInfo)
            let before = try #require(try jwsPayload(latestInfo)["expiresDate"] as? Int64)
            let extended = try await api.extendRenewalDate(
                sub.originalTransactionId, ExtendRenewalDateRequest(extendByDays: 30, extendReasonCode: 3, requestIdentifier: UUID().uuidString),
                environment: .production)
            #expect(extended.success == true && (extended.effectiveDate ?? 0) > before)
        }
    }
}
