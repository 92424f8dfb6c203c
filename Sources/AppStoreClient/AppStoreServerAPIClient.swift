public import AppStoreModels
public import AsyncHTTPClient
public import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// Where the App Store Server API lives. Apple's by default; the simulator's in tests.
public struct ServerAPIEndpoints: Sendable, Hashable, Codable {
    public var production: String
    public var sandbox: String

    public init(production: String, sandbox: String) {
        self.production = production
        self.sandbox = sandbox
    }

    /// The hosts Apple recommends since its server update of 2026-05-05. The older
    /// `api.storekit(-sandbox).itunes.apple.com` still answer; set `serverAPIEndpoints` to use them.
    public static let apple = ServerAPIEndpoints(
        production: "https://api.storekit.apple.com", sandbox: "https://api.storekit-sandbox.apple.com")

    public func baseURL(for environment: AppStoreEnvironment) -> String {
        environment == .sandbox ? sandbox : production
    }
}

/// A Server API call that did not produce an answer. `code` says what a caller can do about it.
public struct ServerAPIError: Error, CustomStringConvertible, Sendable {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public var description: String { rawValue }
        /// Apple answered with an error body (`apiErrorCode`) that retrying will not change.
        public static let apiError = Code(rawValue: "api_error")
        /// 401: the token was refused even when fresh (wrong key, issuer or bundle id).
        public static let unauthorized = Code(rawValue: "unauthorized")
        /// 429 for longer than this client waits; `retryAfter` says when to come back.
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// 5xx, timeouts or connection failures through every attempt.
        public static let unavailable = Code(rawValue: "unavailable")
        /// A 2xx whose body is not the documented JSON.
        public static let malformedResponse = Code(rawValue: "malformed_response")
    }

    public var code: Code
    public var message: String
    public var httpStatus: Int?
    public var apiErrorCode: Int?
    public var retryAfter: Date?

    public init(_ code: Code, _ message: String, httpStatus: Int? = nil, apiErrorCode: Int? = nil, retryAfter: Date? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
        self.apiErrorCode = apiErrorCode
        self.retryAfter = retryAfter
    }

    public var description: String {
        "\(code): \(message)" + (httpStatus.map { " (HTTP \($0))" } ?? "") + (apiErrorCode.map { " [\($0)]" } ?? "")
    }

    /// Worth trying again later (the caller's job schedule decides when).
    public var isTransient: Bool { code == .rateLimited || code == .unavailable }
}

/// One HTTP call to Apple as it ended: which environment, how (`http_<status>`, `timeout` or
/// `connection_failed`) and after how long.
public struct AppleCallObservation: Sendable {
    public var environment: AppStoreEnvironment
    public var outcome: String
    public var elapsed: Duration

    public init(environment: AppStoreEnvironment, outcome: String, elapsed: Duration) {
        self.environment = environment
        self.outcome = outcome
        self.elapsed = elapsed
    }
}

/// How long the client itself keeps trying one call before giving the failure to its caller.
public struct ServerAPIRetryPolicy: Sendable, Hashable {
    /// Calls per operation, first included.
    public var maximumAttempts: Int
    /// Backoff after a 5xx or timeout: `base × 2^(attempt-1)`, capped, with ±`jitter`.
    public var base: Double
    public var cap: Double
    public var jitter: Double
    /// A 429 whose Retry-After lies further ahead than this is handed back (`rateLimited`).
    public var longestRateLimitWait: Double
    /// Timeout of one HTTP call.
    public var timeoutSeconds: Double

    public init(
        maximumAttempts: Int = 4, base: Double = 0.5, cap: Double = 8, jitter: Double = 0.2, longestRateLimitWait: Double = 30,
        timeoutSeconds: Double = 30
    ) {
        self.maximumAttempts = maximumAttempts
        self.base = base
        self.cap = cap
        self.jitter = jitter
        self.longestRateLimitWait = longestRateLimitWait
        self.timeoutSeconds = timeoutSeconds
    }

    func backoff(afterAttempt attempt: Int) -> Double {
        let raw = min(cap, base * pow(2, Double(max(0, attempt - 1))))
        return raw * (1 + Double.random(in: -jitter...jitter))
    }
}

/// The App Store Server API for one app: transaction info and history, subscription statuses,
/// refunds, order lookup, notification history and test notifications, consumption info and
/// renewal-date extensions. Every call carries a reused ES256 token; 429 waits for Retry-After
/// (Apple sends UNIX milliseconds); 5xx, Apple's retryable error codes and timeouts back off and
/// retry; calls about a transaction try production first and move to sandbox on 4040010/4040005.
public struct AppStoreServerAPIClient: Sendable {
    public static let maximumResponseBytes = 16 * 1024 * 1024

    private let httpClient: HTTPClient
    public let endpoints: ServerAPIEndpoints
    public let tokens: ServerAPITokenProvider
    public let policy: ServerAPIRetryPolicy
    /// Apple's published limits for this app's calls (shared by every copy of the client).
    public let throttle: ServerAPIThrottle
    private let now: @Sendable () -> Date
    private let sleep: @Sendable (Double) async throws -> Void
    /// Told of every HTTP call as it ends (each attempt of a retried one), for a caller that
    /// tallies Apple's latency and answers.
    private let observer: (@Sendable (AppleCallObservation) -> Void)?

    public init(
        httpClient: HTTPClient, endpoints: ServerAPIEndpoints, tokens: ServerAPITokenProvider, policy: ServerAPIRetryPolicy = .init(),
        throttle: ServerAPIThrottle = ServerAPIThrottle(),
        now: @escaping @Sendable () -> Date = Date.init,
        sleep: @escaping @Sendable (Double) async throws -> Void = { try await Task.sleep(for: .seconds($0)) },
        observer: (@Sendable (AppleCallObservation) -> Void)? = nil
    ) {
        self.observer = observer
        self.httpClient = httpClient
        self.endpoints = endpoints
        self.tokens = tokens
        self.policy = policy
        self.throttle = throttle
        self.now = now
        self.sleep = sleep
    }

    /// Environments to try for a call about a transaction the caller cannot place.
    public enum Placement: Sendable, Hashable {
        /// Production first, sandbox when production does not know the transaction.
        case either
        case only(AppStoreEnvironment)

        var order: [AppStoreEnvironment] {
            switch self {
            case .either: [.production, .sandbox]
            case .only(let environment): [environment]
            }
        }
    }

    // MARK: Transactions

    public func transactionInfo(
        _ transactionId: String, in placement: Placement = .either
    ) async throws
        -> (TransactionInfoResponse, AppStoreEnvironment)
    {
        try await call(.getTransactionInfo, .GET, "/inApps/v1/transactions/\(escape(transactionId))", placement: placement)
    }

    /// One page; pass the previous page's `revision` for the next.
    public func transactionHistory(
        _ transactionId: String, revision: String? = nil, in placement: Placement = .either
    ) async throws
        -> (HistoryResponse, AppStoreEnvironment)
    {
        var query = [("sort", "ASCENDING")]
        if let revision { query.append(("revision", revision)) }
        return try await call(.getTransactionHistory, .GET, "/inApps/v2/history/\(escape(transactionId))", query: query, placement: placement)
    }

    /// Every page of the customer's history, in Apple's order (bounded by `maximumPages`).
    public func completeTransactionHistory(
        _ transactionId: String, in placement: Placement = .either, maximumPages: Int = 500
    )
        async throws -> (signedTransactions: [String], environment: AppStoreEnvironment)
    {
        var (page, environment) = try await transactionHistory(transactionId, in: placement)
        var signed = page.signedTransactions ?? []
        var pages = 1
        while page.hasMore == true, let revision = page.revision, pages < maximumPages {
            (page, _) = try await transactionHistory(transactionId, revision: revision, in: .only(environment))
            signed += page.signedTransactions ?? []
            pages += 1
        }
        return (signed, environment)
    }

    public func subscriptionStatuses(
        _ transactionId: String, in placement: Placement = .either
    ) async throws
        -> (StatusResponse, AppStoreEnvironment)
    {
        try await call(.getAllSubscriptionStatuses, .GET, "/inApps/v1/subscriptions/\(escape(transactionId))", placement: placement)
    }

    public func refundHistory(
        _ transactionId: String, revision: String? = nil, in placement: Placement = .either
    ) async throws
        -> (RefundHistoryResponse, AppStoreEnvironment)
    {
        try await call(
            .getRefundHistory, .GET, "/inApps/v2/refund/lookup/\(escape(transactionId))", query: revision.map { [("revision", $0)] } ?? [],
            placement: placement)
    }

    public func lookUpOrder(_ orderId: String, in placement: Placement = .either) async throws -> (OrderLookupResponse, AppStoreEnvironment) {
        try await call(.lookUpOrderId, .GET, "/inApps/v1/lookup/\(escape(orderId))", placement: placement)
    }

    /// The customer's signed app transaction. Any transaction id of the customer
    /// will do: original, renewal or app transaction id.
    public func appTransactionInfo(
        _ anyTransactionId: String, in placement: Placement = .either
    ) async throws
        -> (AppTransactionInfoResponse, AppStoreEnvironment)
    {
        try await call(.getAppTransactionInfo, .GET, "/inApps/v1/transactions/appTransactions/\(escape(anyTransactionId))", placement: placement)
    }

    /// Set App Account Token: binds a purchase to one of the developer's accounts
    /// after the fact. Apple wants the original transaction id and a UUID.
    @discardableResult
    public func setAppAccountToken(
        _ originalTransactionId: String, _ token: String, in placement: Placement = .either
    ) async throws -> AppStoreEnvironment {
        let body = try JSONEncoder().encode(UpdateAppAccountTokenRequest(appAppAccountToken: token))
        let (_, environment): (Empty, AppStoreEnvironment) = try await call(
            .setAppAccountToken, .PUT, "/inApps/v1/transactions/\(escape(originalTransactionId))/appAccountToken", body: body, placement: placement)
        return environment
    }

    /// Finish Transaction (API 1.20+): the server delivered what was bought, so StoreKit need
    /// not keep offering the transaction to the app.
    @discardableResult
    public func finishTransaction(_ transactionId: String, in placement: Placement = .either) async throws -> AppStoreEnvironment {
        let (_, environment): (Empty, AppStoreEnvironment) = try await call(
            .finishTransaction, .POST, "/inApps/v1/transactions/\(escape(transactionId))/finish", placement: placement)
        return environment
    }

    // MARK: Notifications

    /// One page of the notifications Apple sent (or tried to send) in the request's window.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, paginationToken: String? = nil, environment: AppStoreEnvironment
    )
        async throws -> NotificationHistoryResponse
    {
        try await call(
            .getNotificationHistory, .POST, "/inApps/v1/notifications/history", query: paginationToken.map { [("paginationToken", $0)] } ?? [],
            body: try JSONEncoder().encode(request), placement: .only(environment)
        ).0
    }

    public func requestTestNotification(environment: AppStoreEnvironment) async throws -> SendTestNotificationResponse {
        try await call(.requestTestNotification, .POST, "/inApps/v1/notifications/test", placement: .only(environment)).0
    }

    public func testNotificationStatus(_ token: String, environment: AppStoreEnvironment) async throws -> CheckTestNotificationResponse {
        try await call(.getTestNotificationStatus, .GET, "/inApps/v1/notifications/test/\(escape(token))", placement: .only(environment)).0
    }

    // MARK: Consumption and extensions

    public func sendConsumptionInformation(
        _ transactionId: String, _ body: ConsumptionRequest, environment: AppStoreEnvironment
    )
        async throws
    {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .sendConsumptionInformationV1, .PUT, "/inApps/v1/transactions/consumption/\(escape(transactionId))", body: try JSONEncoder().encode(body),
            placement: .only(environment))
    }

    /// Send Consumption Information v2, the answer to a CONSUMPTION_REQUEST.
    @discardableResult
    public func sendConsumptionInformation(
        _ transactionId: String, _ body: ConsumptionRequestV2, in placement: Placement = .either
    ) async throws -> AppStoreEnvironment {
        let (_, environment): (Empty, AppStoreEnvironment) = try await call(
            .sendConsumptionInformation, .PUT, "/inApps/v2/transactions/consumption/\(escape(transactionId))", body: try JSONEncoder().encode(body),
            placement: placement)
        return environment
    }

    public func extendRenewalDate(
        _ originalTransactionId: String, _ body: ExtendRenewalDateRequest, environment: AppStoreEnvironment
    ) async throws -> ExtendRenewalDateResponse {
        try await call(
            .extendSubscriptionRenewalDate, .PUT, "/inApps/v1/subscriptions/extend/\(escape(originalTransactionId))",
            body: try JSONEncoder().encode(body),
            placement: .only(environment)
        ).0
    }

    /// Asks Apple to extend every active subscription to a product (answered at once; Apple
    /// works through them later: see `massExtensionStatus`).
    public func extendRenewalDates(
        _ body: MassExtendRenewalDateRequest, environment: AppStoreEnvironment
    ) async throws
        -> MassExtendRenewalDateResponse
    {
        try await call(
            .extendRenewalDatesForAllActiveSubscribers, .POST, "/inApps/v1/subscriptions/extend/mass", body: try JSONEncoder().encode(body),
            placement: .only(environment)
        ).0
    }

    public func massExtensionStatus(
        productId: String, requestIdentifier: String, environment: AppStoreEnvironment
    ) async throws -> MassExtendRenewalDateStatusResponse {
        try await call(
            .getRenewalDateExtensionStatus, .GET, "/inApps/v1/subscriptions/extend/mass/\(escape(productId))/\(escape(requestIdentifier))",
            placement: .only(environment)
        ).0
    }

    // MARK: Transport

    struct Empty: Decodable {}

    func escape(_ segment: String) -> String {
        segment.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? segment
    }

    func call<Response: Decodable>(
        _ endpoint: ServerAPIEndpoint, _ method: HTTPMethod, _ path: String, query: [(String, String)] = [], body: Data? = nil,
        contentType: String = "application/json", placement: Placement
    ) async throws -> (Response, AppStoreEnvironment) {
        let order = placement.order
        for (index, environment) in order.enumerated() {
            do {
                let call = Call(
                    endpoint: endpoint, method: method, path: path, query: query, body: body, contentType: contentType, environment: environment)
                return (try await callWithRetries(call), environment)
            } catch let error as ServerAPIError
                where index + 1 < order.count
                && (error.apiErrorCode == ServerAPIErrorBody.transactionIdNotFound
                    || error.apiErrorCode == ServerAPIErrorBody.originalTransactionIdNotFound)
            {
                continue  // Not a production transaction: ask the sandbox.
            }
        }
        throw ServerAPIError(.apiError, "no environment to try")
    }

    /// One request as sent to one environment (each attempt sends it again).
    struct Call {
        var endpoint: ServerAPIEndpoint
        var method: HTTPMethod
        var path: String
        var query: [(String, String)]
        var body: Data?
        var contentType: String
        var environment: AppStoreEnvironment
    }

    /// One span per environment asked, around its retries (AsyncHTTPClient adds one per request).
    private func callWithRetries<Response: Decodable>(_ call: Call) async throws -> Response {
        try await withSpan("apple.server_api", ofKind: .client) { span in
            span.attributes["apple.environment"] = call.environment.rawValue
            span.attributes["http.request.method"] = call.method.rawValue
            span.attributes["url.path"] = call.path
            return try await retrying(call)
        }
    }

    private func retrying<Response: Decodable>(_ call: Call) async throws -> Response {
        var refreshedToken = false
        var attempt = 0
        while true {
            attempt += 1
            // Every attempt takes its place within Apple's limit for the endpoint.
            let start = now()
            switch throttle.reserve(call.endpoint, in: call.environment, now: start, notAfter: start.addingTimeInterval(policy.longestRateLimitWait))
            {
            case .at(let slot):
                if slot > start { try await sleep(slot.timeIntervalSince(start)) }
            case .notBefore(let slot):
                throw ServerAPIError(
                    .rateLimited, "held back to stay within Apple's limit for \(call.endpoint.rawValue)", retryAfter: slot)
            }
            let outcome = await once(call)
            let failure: ServerAPIError
            switch outcome {
            case .answered(let status, let bytes, let retryAfter):
                if (200..<300).contains(status) {
                    let data = bytes.isEmpty && Response.self == Empty.self ? Data("{}".utf8) : bytes
                    do {
                        return try JSONDecoder().decode(Response.self, from: data)
                    } catch {
                        throw ServerAPIError(.malformedResponse, "\(call.path): \(error)", httpStatus: status)
                    }
                }
                let apiError = try? JSONDecoder().decode(ServerAPIErrorBody.self, from: bytes)
                let message = apiError?.errorMessage ?? "HTTP \(status)"
                if status == 401 {
                    // One fresh token, in case ours went stale; a second 401 is a configuration problem.
                    guard !refreshedToken else { throw ServerAPIError(.unauthorized, message, httpStatus: status) }
                    refreshedToken = true
                    await tokens.invalidate()
                    attempt -= 1
                    continue
                }
                if status == 429 {
                    let wait = max(0, (retryAfter ?? now().addingTimeInterval(policy.backoff(afterAttempt: attempt))).timeIntervalSince(now()))
                    let until = now().addingTimeInterval(wait)
                    // Every other caller of the endpoint waits too, rather than collecting its own 429.
                    throttle.hold(call.endpoint, in: call.environment, until: until)
                    let error = ServerAPIError(.rateLimited, message, httpStatus: status, apiErrorCode: apiError?.errorCode, retryAfter: until)
                    guard attempt < policy.maximumAttempts, wait <= policy.longestRateLimitWait else { throw error }
                    continue  // The next attempt's reservation waits for the hold.
                }
                let retryable = status >= 500 || apiError?.errorCode.map(ServerAPIErrorBody.retryableCodes.contains) == true
                guard retryable else {
                    throw ServerAPIError(.apiError, message, httpStatus: status, apiErrorCode: apiError?.errorCode)
                }
                failure = ServerAPIError(.unavailable, message, httpStatus: status, apiErrorCode: apiError?.errorCode)
            case .failed(let reason):
                failure = ServerAPIError(.unavailable, reason)
                guard call.endpoint.safeToResendUnanswered else {
                    throw ServerAPIError(
                        .unavailable,
                        "\(call.endpoint.rawValue) went unanswered (\(reason)); not sent again, since Apple may have applied it: check before asking again"
                    )
                }
            }
            guard attempt < policy.maximumAttempts else { throw failure }
            try await sleep(policy.backoff(afterAttempt: attempt))
        }
    }

    private enum Outcome {
        case answered(status: Int, body: Data, retryAfter: Date?)
        case failed(String)
    }

    private func once(_ call: Call) async -> Outcome {
        var components = URLComponents(string: endpoints.baseURL(for: call.environment) + call.path)
        if !call.query.isEmpty { components?.queryItems = call.query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        guard let url = components?.string else { return .failed("bad URL for \(call.path)") }
        var request = HTTPClientRequest(url: url)
        request.method = call.method
        do {
            request.headers.add(name: "Authorization", value: "Bearer \(try await tokens.token(now: now()))")
        } catch {
            return .failed("could not sign the token: \(error)")
        }
        request.headers.add(name: "Accept", value: "application/json")
        if let body = call.body {
            request.headers.add(name: "Content-Type", value: call.contentType)
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let started = ContinuousClock.now
        let outcome: Outcome
        let label: String
        do {
            let response = try await httpClient.execute(request, timeout: .milliseconds(Int64(policy.timeoutSeconds * 1000)))
            let bytes = try await response.body.collect(upTo: Self.maximumResponseBytes)
            let retryAfter = response.headers.first(name: "Retry-After").flatMap { Self.retryAfter($0, now: now()) }
            outcome = .answered(status: Int(response.status.code), body: Data(bytes.readableBytesView), retryAfter: retryAfter)
            label = "http_\(response.status.code)"
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            outcome = .failed(String(describing: error))
            label = "timeout"
        } catch {
            outcome = .failed(String(describing: error))
            label = "connection_failed"
        }
        observer?(AppleCallObservation(environment: call.environment, outcome: label, elapsed: ContinuousClock.now - started))
        return outcome
    }

    /// Apple's Server API sends UNIX milliseconds; plain HTTP sends seconds to wait.
    static func retryAfter(_ value: String, now: Date) -> Date? {
        guard let number = Double(value.trimmingCharacters(in: .whitespaces)), number >= 0 else { return nil }
        return number > 100_000_000_000 ? Date(timeIntervalSince1970: number / 1000) : now.addingTimeInterval(number)
    }
}
