import AppStoreClient
public import AsyncHTTPClient
public import Foundation
public import Hummingbird
import HummingbirdCore
public import JobQueue
public import Logging
public import Persistence
public import ServiceLifecycle
import StorekeeperCore

/// Wires the server: storage, Apple client, verification workers and the HTTP API.
/// `@main` only reads configuration and calls this.
public enum StorekeeperApplication {
    /// Prepares storage (catalog seeds, configuration holds) and returns the application,
    /// with the job runner as one of its services when `runWorkers` is on. The store's `queued`
    /// signal wakes the runner; `extraServices` (a database's job-notification listener) run alongside.
    public static func build(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient, logger: Logger,
        idle: IdleSignal? = nil, extraServices: [any Service] = [],
        metrics: MetricsRegistry = MetricsRegistry(), now: @escaping @Sendable () -> Date = { Date() },
        routeListing: RouteListing? = nil, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws -> some ApplicationProtocol {
        try await prepareStorage(configuration: configuration, store: store, logger: logger, now: now)
        let context = try makeContext(
            configuration: configuration, store: store, httpClient: httpClient, metrics: metrics, logger: logger, now: now)
        let runner =
            configuration.runWorkers
            ? try makeRunner(
                configuration: configuration, store: store, httpClient: httpClient, metrics: metrics,
                logger: logger, now: now, signedGate: context.signedTransactionGate, health: context.appleHealth,
                calls: context.appleCalls, idle: idle)
            : nil
        var background: [any Service] = runner.map { [$0] } ?? []
        if configuration.runWorkers, let gapFill = makeGapFill(context: context) { background.append(gapFill) }
        if configuration.runWorkers {
            background.append(EventRetention(store: store, retentionDays: configuration.eventRetentionDays, logger: logger, now: now))
            if configuration.lapseSweepSeconds > 0 {
                background.append(
                    EntitlementLapses(
                        record: RecordLapses(store: store), intervalSeconds: configuration.lapseSweepSeconds, logger: logger, now: now))
            }
        }
        // Every process calls Apple (the API's own OCSP while a purchase is posted, too). First:
        // services stop in reverse order, so its last flush follows the workers' last call.
        background.insert(makeAppleCallFlusher(recorder: context.appleCalls, store: store, logger: logger, now: now), at: 0)

        let router = Router(context: StorekeeperRequestContext.self, options: .autoGenerateHeadEndpoints)
        let routes = RouteTable(router: router, context: context)
        // Outermost, so it sees every answer as sent (errors already turned into responses). It
        // reports to the process's `MetricsSystem`: `serve` points that at `metrics`.
        router.add(middleware: MetricsMiddleware())
        // A span per request (route pattern as its name), to the process's tracer: none unless
        // one is bootstrapped, or a test scopes one with `withTracer`.
        router.add(middleware: TracingMiddleware())
        router.add(
            middleware: ErrorMiddleware(
                health: context.storageHealth, now: now, routes: routes.known, metrics: context.metrics,
                trustedProxies: configuration.trustedProxies))
        AppController(context: context).register(on: routes)
        EventFeedController(context: context).register(on: routes)
        WebhookController(context: context).register(on: routes)
        NotificationController(context: context).register(on: routes)
        CatalogController(context: context).register(on: routes)
        VerificationAdminController(context: context).register(on: routes)
        LedgerController(context: context).register(on: routes)
        PromotionalGrantsController(context: context).register(on: routes)
        AdminTokensController(context: context).register(on: routes)
        OfferingsController(context: context).register(on: routes)
        OffersController(context: context).register(on: routes)
        CreditsController(context: context).register(on: routes)
        RefundRequestsController(context: context).register(on: routes)
        RetentionController(context: context).register(on: routes)
        RetentionConfigurationController(context: context).register(on: routes)
        CustomersController(context: context).register(on: routes)
        IdentityController(context: context).register(on: routes)
        ImportController(context: context).register(on: routes)
        AnalyticsController(context: context).register(on: routes)
        AppleActionsController(context: context).register(on: routes)
        OperationsController(context: context, runner: runner).register(on: routes)
        try ConsoleController(context: context).register(on: routes)
        routeListing?.fill(from: routes.known)
        let limits = ConnectionLimits.establish(configuration: configuration)
        limits.log(to: logger, idleTimeoutSeconds: configuration.idleTimeoutSeconds)

        logger.info(
            "storekeeper configured",
            metadata: [
                "apple.production": "\(configuration.appleEndpoints.production)",
                "apple.sandbox": "\(configuration.appleEndpoints.sandbox)",
                "apps": "\(configuration.apps.map { "\($0.id) (\($0.bundleId))" }.joined(separator: ", "))",
                "workers": "\(configuration.runWorkers ? String(configuration.workers) : "off")",
            ])
        return Application(
            router: router,
            server: .http1(configuration: httpConfiguration(configuration)),
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "storekeeper", backlog: 4096,
                availableConnectionsDelegate: .maximum(limits.maxConnections, logger: logger)),
            services: background + extraServices,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? configuration.port
                logger.info("storekeeper listening", metadata: ["address": "http://\(configuration.host):\(port)"])
                await onRunning(port)
            },
            logger: logger)
    }

    /// Request line and headers: 32 KB and 100 fields, far above what an app's backend or Apple
    /// sends, far below what would let a client make the server buffer megabytes per connection.
    static let headerLimitBytes = 32 * 1024
    static let headerFieldLimit = 100

    static func httpConfiguration(_ configuration: StorekeeperConfiguration) -> HTTP1Channel.Configuration {
        HTTP1Channel.Configuration(
            additionalChannelHandlers: [
                HTTPParseErrorHandler(headerLimitBytes: headerLimitBytes, headerFieldLimit: headerFieldLimit),
                RequestReadDeadlineHandler(deadline: .milliseconds(Int64(configuration.requestTimeoutSeconds * 1000))),
            ],
            idleTimeout: .milliseconds(Int64(configuration.idleTimeoutSeconds * 1000)),
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: headerLimitBytes, maxHeaderListSize: headerLimitBytes, maxHeaderFieldCount: headerFieldLimit))
    }

    /// Releases the leases of processes this machine can prove are gone (a kill -9 before this
    /// start), seeds each app's catalog (entries not stored yet) and releases verifications held
    /// under an earlier configuration. Every process runs it at start; every step is idempotent.
    public static func prepareStorage(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws {
        let released = try await store.releaseLeasesOfGoneProcesses(now: now())
        if released > 0 {
            logger.notice("leases of a process that is gone released: its verifications resume now", metadata: ["count": "\(released)"])
        }
        for app in configuration.apps {
            try await store.seedProducts(appId: app.id, products: app.products, now: now())
            try await store.seedEntitlements(appId: app.id, definitions: app.entitlements, now: now())
            try await store.seedOfferings(appId: app.id, offerings: app.offerings, targeting: app.offeringTargeting, now: now())
            let released = try await ReleaseConfigurationHolds(store: store)(appId: app.id, currentFingerprint: app.fingerprint, now: now())
            if released > 0 {
                logger.notice(
                    "configuration changed: verifications released for another attempt", metadata: ["app": "\(app.id)", "count": "\(released)"])
            }
        }
    }

    /// The verification workers alone, for `storekeeper verify` and worker-only processes.
    /// `calls`: where its calls to Apple are tallied (kept by `makeAppleCallFlusher`'s service).
    public static func makeRunner(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient,
        metrics: MetricsRegistry = MetricsRegistry(), logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }, calls: AppleCallRecorder? = nil
    ) throws -> JobRunner {
        return try makeRunner(
            configuration: configuration, store: store, httpClient: httpClient, metrics: metrics, logger: logger,
            now: now, signedGate: nil,
            health: makeHealth(configuration: configuration, store: store, metrics: metrics, logger: logger), calls: calls)
    }

    /// The service that keeps a process's tallied calls to Apple in the database (the health
    /// page's latency and status codes over time).
    public static func makeAppleCallFlusher(
        recorder: AppleCallRecorder, store: any StorekeeperStore, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) -> any Service {
        AppleCallFlusher(recorder: recorder, history: AppleCallHistory(store: store), logger: logger, now: now)
    }

    /// One per process: every worker shares what it learns of Apple.
    static func makeHealth(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, metrics: MetricsRegistry, logger: Logger
    ) -> AppleHealthMonitor? {
        guard configuration.appleHealth.enabled else { return nil }
        return AppleHealthMonitor(
            policy: configuration.appleHealth.policy(), store: store,
            metrics: metrics, logger: logger,
            waitingKinds: [
                // A receipt's verification waits for verifyReceipt, and for the Server API when
                // that stands in; a subscriber refresh waits for the Server API.
                "verify_receipt": [verifyReceiptJobKind], "server_api": [verifyReceiptJobKind, refreshFromServerAPIJobKind],
            ],
            releasePerSecond: configuration.appleHealth.releasePerSecond > 0 ? configuration.appleHealth.releasePerSecond : nil,
            appIds: configuration.apps.map(\.id), sandboxAppIds: configuration.apps.filter(\.acceptSandbox).map(\.id))
    }

    /// `signedGate`: the API's own, so both share one chain cache and one OCSP answer cache.
    static func makeRunner(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient, metrics: MetricsRegistry,
        logger: Logger, now: @escaping @Sendable () -> Date, signedGate sharedGate: SignedTransactionGate?,
        health: AppleHealthMonitor?, calls: AppleCallRecorder?, idle: IdleSignal? = nil
    ) throws -> JobRunner {
        let signedGate =
            try sharedGate
            ?? SignedTransactionGate(configuration: configuration.receiptTrust, httpClient: httpClient, health: health, calls: calls, now: now)
        let clients = try ServerAPIClients.make(configuration: configuration, httpClient: httpClient, calls: calls, now: now)
        let serverAPIs = clients.mapValues { ServerAPIHistory(client: $0, gate: signedGate) }
        let outcomes = VerificationOutcomes(store: store)
        var handler = VerifyReceiptJobHandler(
            outcomes: outcomes,
            verifiers: ReceiptVerifiers(
                client: VerifyReceiptClient(httpClient: httpClient, endpoints: configuration.appleEndpoints),
                timeout: configuration.attemptTimeoutSeconds, metrics: metrics, calls: calls, now: now),
            gate: try ReceiptGate(configuration: configuration.receiptTrust), serverAPIs: serverAPIs,
            apps: Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.id, $0) }), configuration: configuration,
            metrics: metrics, logger: logger, now: now)
        handler.health = health
        let signedHandler = SignedTransactionJobHandler(
            outcomes: outcomes, gate: signedGate,
            apps: Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.id, $0) }), configuration: configuration,
            metrics: metrics, logger: logger, now: now)
        var refreshHandler = ServerAPIRefreshJobHandler(
            outcomes: outcomes, serverAPIs: serverAPIs, apps: Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.id, $0) }),
            configuration: configuration, metrics: metrics, logger: logger, now: now)
        refreshHandler.health = health
        var runnerConfiguration = JobRunner.Configuration()
        runnerConfiguration.concurrency = configuration.workers
        runnerConfiguration.leaseDuration = configuration.leaseSeconds
        runnerConfiguration.batchSize = min(64, configuration.workers)
        runnerConfiguration.shutdownGrace = configuration.shutdownGraceSeconds
        let webhookHandler = WebhookDeliveryJobHandler(
            outcomes: WebhookDeliveryOutcomes(store: store, schedule: configuration.webhooks.retrySchedule),
            sender: WebhookSender(
                httpClient: httpClient, timeoutSeconds: configuration.webhooks.timeoutSeconds,
                destinations: configuration.webhooks.destinationPolicy),
            heldRecheckSeconds: configuration.webhooks.heldRecheckSeconds, metrics: metrics,
            logger: logger, now: now)
        let refundHandler = RefundRequestJobHandler(
            answers: AnswerRefundRequests(store: store),
            senders: clients.mapValues(ConsumptionSender.init(client:)),
            apps: Dictionary(uniqueKeysWithValues: configuration.apps.map { ($0.id, $0) }),
            metrics: metrics, logger: logger,
            now: now)
        return JobRunner(
            store: store, handlers: [handler, signedHandler, refreshHandler, webhookHandler, refundHandler], configuration: runnerConfiguration,
            signal: store.queued, idle: idle, logger: logger, now: now)
    }

    static func makeContext(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient, metrics: MetricsRegistry,
        logger: Logger, now: @escaping @Sendable () -> Date
    ) throws -> ServerContext {
        // The API's own processes call Apple too (OCSP while a purchase is posted), so every
        // process keeps Apple's health, not only the ones with workers.
        let health = makeHealth(configuration: configuration, store: store, metrics: metrics, logger: logger)
        let calls = AppleCallRecorder()
        var context = ServerContext(
            configuration: configuration, useCases: UseCases(store: store), metrics: metrics, logger: logger,
            now: now, storageHealth: StorageHealth(),
            receiptGate: try ReceiptGate(configuration: configuration.receiptTrust),
            signedTransactionGate: try SignedTransactionGate(
                configuration: configuration.receiptTrust, httpClient: httpClient, health: health, calls: calls, now: now),
            serverAPIClients: try ServerAPIClients.make(configuration: configuration, httpClient: httpClient, calls: calls, now: now),
            clientGate: ClientGate(apps: configuration.apps))
        context.appleHealth = health
        context.appleCalls = calls
        // Parsed once: each signature then costs only its ECDSA step (offers, retention answers).
        for app in configuration.apps {
            if let credentials = app.offerSigningCredentials { context.offerSigners[app.id] = try OfferSigner(credentials: credentials) }
        }
        return context
    }

    static func makeGapFill(context: ServerContext) -> NotificationGapFill? {
        guard context.configuration.notificationGapFill.enabled, !context.serverAPIClients.isEmpty else { return nil }
        return NotificationGapFill(context: context, policy: context.configuration.notificationGapFill)
    }

    /// The notification gap-fill for worker-only processes (nil when no app has a Server API key
    /// or the gap-fill is off).
    public static func makeGapFillService(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient, logger: Logger
    ) throws -> (any Service)? {
        makeGapFill(
            context: try makeContext(
                configuration: configuration, store: store, httpClient: httpClient, metrics: MetricsRegistry(),
                logger: logger, now: { Date() }))
    }

    /// An HTTP client sized for many slow Apple calls at once. It follows no redirect: Apple
    /// sends none, and a webhook receiver's redirect must not send a signed event elsewhere.
    ///
    /// A connection that cannot be made fails its request at once. AsyncHTTPClient's default
    /// tries again with backoff until the connect timeout, which turns "Apple refused the
    /// connection" into a 10-second "timeout" per attempt and holds a worker for it. Here the
    /// job queue's backoff is the retry, and the failure keeps its name (`apple_unreachable`).
    public static func makeHTTPClient(configuration: StorekeeperConfiguration) -> HTTPClient {
        var http = HTTPClient.Configuration()
        http.redirectConfiguration = .disallow
        http.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: max(8, configuration.workers))
        http.connectionPool.retryConnectionEstablishment = false
        let timeouts = configuration.appleTimeouts
        http.timeout = .init(
            connect: .milliseconds(Int64(timeouts.connectSeconds * 1000)), read: .milliseconds(Int64(timeouts.readSeconds * 1000)))
        return HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
    }
}
